"""Episodic memory: an agent's reflections and beliefs, by simulated day.

Used by later layers (the manager's reflections and the CVRF belief
updates). Entries are only ever returned for days up to the query day.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from fincon.data.events.model import day_int
from fincon.memory.collections import open_collection
from fincon.memory.procedural import _flat, collection_name

KINDS = ("reflection", "belief", "action")


@dataclass(frozen=True)
class Episode:
    id: str
    day: pd.Timestamp
    kind: str
    text: str
    metadata: Mapping[str, Any]


class EpisodicMemory:
    def __init__(self, client, agent: str, embedder):
        self.client = client
        self.agent = agent
        self.collection = open_collection(client, collection_name("epi", agent), embedder)

    def __len__(self) -> int:
        return self.collection.count()

    def add(
        self, day: Any, kind: str, text: str, metadata: Mapping[str, Any] | None = None, id: str | None = None
    ) -> str:
        if kind not in KINDS:
            raise ValueError(f"episode kind must be one of {KINDS}, not {kind!r}")
        eid = id or f"{self.agent}-{kind}-{day_int(day)}-{self.collection.count()}"
        self.collection.upsert(
            ids=[eid], documents=[text], metadatas=[{"day": day_int(day), "kind": kind, **_flat(metadata or {})}]
        )
        return eid

    def _episodes(self, got) -> list[Episode]:
        out = []
        for i, doc, m in zip(got["ids"], got["documents"], got["metadatas"]):
            out.append(
                Episode(
                    i,
                    pd.Timestamp(str(m["day"])),
                    m["kind"],
                    doc,
                    {k[2:]: v for k, v in m.items() if k.startswith("m_")},
                )
            )
        return out

    def recent(self, day: Any, n: int = 5, kinds: Sequence[str] | None = None) -> list[Episode]:
        where: dict = {"day": {"$lte": day_int(day)}}
        if kinds:
            where = {"$and": [where, {"kind": {"$in": list(kinds)}}]}
        eps = self._episodes(self.collection.get(where=where, include=["documents", "metadatas"]))
        eps.sort(key=lambda e: (e.day, e.id))
        return eps[-n:] if n else eps

    def latest_belief(self, day: Any) -> Episode | None:
        eps = self.recent(day, 1, ["belief"])
        return eps[0] if eps else None

    def search(self, query: str, day: Any, k: int = 3) -> list[Episode]:
        n = self.collection.count()
        if n == 0:
            return []
        got = self.collection.query(
            query_texts=[query],
            n_results=min(n, k),
            where={"day": {"$lte": day_int(day)}},
            include=["documents", "metadatas"],
        )
        return self._episodes(
            {"ids": got["ids"][0], "documents": got["documents"][0], "metadatas": got["metadatas"][0]}
        )
