"""Episodic memory: an agent's reflections and beliefs, by simulated day.

Used by later layers (the manager's reflections and the CVRF belief
updates). Entries are only ever returned for days up to the query day.

The episodes are also kept in the process (read once from chromadb when the
memory opens), so :meth:`EpisodicMemory.recent`, which the manager asks
every day, filters a list instead of reading the whole collection back; with
``write_behind`` new episodes reach chromadb at :meth:`EpisodicMemory.flush`
(the run's owner calls it every few weeks and at the end, as for procedural
memory). On a rules-brain training the per-day chromadb reads and writes
were a fifth of the run.
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
    """One agent's episodes. ``write_behind``: :meth:`add` holds its writes
    until :meth:`flush` (a :meth:`search` flushes first); the owner must
    flush before the run counts as done."""

    def __init__(self, client, agent: str, embedder, write_behind: bool = False):
        self.client = client
        self.agent = agent
        self.write_behind = write_behind
        self.collection = open_collection(client, collection_name("epi", agent), embedder)
        got = self.collection.get(include=["documents", "metadatas"])
        self._rows: dict[str, Episode] = {e.id: e for e in self._episodes(got)}
        self._pending: dict[str, tuple[str, dict[str, Any]]] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def add(
        self, day: Any, kind: str, text: str, metadata: Mapping[str, Any] | None = None, id: str | None = None
    ) -> str:
        """Store an episode (an existing ``id`` is replaced, as chromadb's upsert does)."""
        if kind not in KINDS:
            raise ValueError(f"episode kind must be one of {KINDS}, not {kind!r}")
        eid = id or f"{self.agent}-{kind}-{day_int(day)}-{len(self._rows)}"
        meta = {"day": day_int(day), "kind": kind, **_flat(metadata or {})}
        self._rows[eid] = self._episode(eid, text, meta)
        self._pending[eid] = (text, meta)
        if not self.write_behind:
            self.flush()
        return eid

    def flush(self) -> int:
        """Write the held-back episodes to chromadb; returns how many."""
        if not self._pending:
            return 0
        ids = list(self._pending)
        batch = max(1, min(int(self.client.get_max_batch_size()), 5000))
        for i in range(0, len(ids), batch):
            part = ids[i : i + batch]
            self.collection.upsert(
                ids=part,
                documents=[self._pending[k][0] for k in part],
                metadatas=[self._pending[k][1] for k in part],
            )
        self._pending.clear()
        return len(ids)

    @staticmethod
    def _episode(eid: str, doc: str, m: Mapping[str, Any]) -> Episode:
        return Episode(
            eid,
            pd.Timestamp(str(m["day"])),
            m["kind"],
            doc,
            {k[2:]: v for k, v in m.items() if k.startswith("m_")},
        )

    def _episodes(self, got) -> list[Episode]:
        return [self._episode(i, doc, m) for i, doc, m in zip(got["ids"], got["documents"], got["metadatas"])]

    def recent(self, day: Any, n: int = 5, kinds: Sequence[str] | None = None) -> list[Episode]:
        last = pd.Timestamp(str(day_int(day)))
        eps = [e for e in self._rows.values() if e.day <= last and (not kinds or e.kind in kinds)]
        eps.sort(key=lambda e: (e.day, _added(e.id), e.id))  # "-10" after "-9": the order they were added
        return eps[-n:] if n else eps

    def latest_belief(self, day: Any) -> Episode | None:
        eps = self.recent(day, 1, ["belief"])
        return eps[0] if eps else None

    def search(self, query: str, day: Any, k: int = 3) -> list[Episode]:
        self.flush()
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


def _added(eid: str) -> int:
    """The count an id made by :meth:`EpisodicMemory.add` ends with (when it was added), else -1."""
    tail = eid.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1
