"""Procedural memory on chromadb, ranked as in FinCon (appendix A.13).

One collection per (analyst, ticker) inside an embedded ``PersistentClient``
that lives in the run store. Each entry is a memory event with the simulated
day it became visible. For a query on day D the score of an entry E is

    S = rel_scaled + imp_scaled
    rel = cos(m_E, m_P)                     rel_scaled = (rel + 1) / 2
    imp = v_src * theta_src ** dt + 5 * n   imp_scaled = min(imp / 100, 1)

where ``dt`` is D minus E's day in *simulated calendar days* (never the wall
clock) and ``n`` is E's access counter: the manager marks memory ids that
were critical to a profitable decision and each mark adds +5 (the bonus does
not decay). ``(v, theta)`` depend on the source: news fades fast, 10-Q and
earnings calls at a medium rate, 10-K slowly.

Candidates are the ``pool`` nearest neighbours by cosine (HNSW) plus every
entry whose importance alone could lift it into the top-k (see
:meth:`ProceduralMemory.retrieve`); all are rescored exactly, so the ranking
equals brute force up to the recall of the HNSW index.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from fincon.data.events.model import day_int
from fincon.errors import ConfigError
from fincon.memory.collections import open_collection

log = logging.getLogger(__name__)

IMPORTANCE_SCALE = 100.0
ACCESS_BONUS = 5.0


@dataclass(frozen=True)
class Decay:
    """Initial importance ``value`` and per-day retention ``theta``."""

    value: float
    theta: float

    def importance(self, age_days: float) -> float:
        return self.value * self.theta ** max(age_days, 0.0)

    def horizon(self, min_scaled: float) -> int:
        """Days after which v*theta^dt / scale drops below ``min_scaled``."""
        if self.value / IMPORTANCE_SCALE <= min_scaled:
            return 0
        return int(math.ceil(math.log(min_scaled * IMPORTANCE_SCALE / self.value) / math.log(self.theta)))


DEFAULT_DECAY: Mapping[str, Decay] = {
    "news": Decay(70.0, 0.90),          # half-life ~6.6 days
    "analyst_note": Decay(75.0, 0.95),  # ~13.5 days
    "10-Q": Decay(80.0, 0.98),          # ~34 days
    "earnings_call": Decay(80.0, 0.98),
    "10-K": Decay(90.0, 0.995),         # ~138 days
    "reflection": Decay(60.0, 0.97),
}


@dataclass(frozen=True)
class MemoryEntry:
    """One memory event: the day it became visible, its text and its origin."""

    id: str
    ticker: str
    source: str
    day: pd.Timestamp
    text: str
    event_ids: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoredMemory:
    id: str
    source: str
    day: pd.Timestamp
    text: str
    relevancy: float
    importance: float
    relevancy_scaled: float
    importance_scaled: float
    score: float
    access: int
    age_days: int
    metadata: Mapping[str, Any] = field(default_factory=dict)


def collection_name(kind: str, agent: str, ticker: str = "") -> str:
    raw = "-".join(p for p in ("fincon", kind, agent, ticker) if p)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", raw)[:500]
    return name if name[-1].isalnum() else name + "0"


def _ordinal(day: Any) -> int:
    return pd.Timestamp(day).date().toordinal()


def _flat(meta: Mapping[str, Any]) -> dict[str, Any]:
    """chromadb metadata holds scalars only."""
    out = {}
    for k, v in meta.items():
        if isinstance(v, (bool, int, float, str)):
            out[f"m_{k}"] = v
    return out


class ProceduralMemory:
    """One analyst's memory of one ticker."""

    def __init__(self, client, agent: str, ticker: str, embedder, decay: Mapping[str, Decay] | None = None,
                 pool: int = 50, min_importance: float = 0.02):
        self.client = client
        self.agent, self.ticker = agent, ticker
        self.embedder = embedder
        self.decay = dict(DEFAULT_DECAY if decay is None else decay)
        self.pool = pool
        self.min_importance = min_importance
        self.collection = open_collection(client, collection_name("proc", agent, ticker), embedder)

    def __len__(self) -> int:
        return self.collection.count()

    def _decay_for(self, source: str) -> Decay:
        d = self.decay.get(source)
        if d is None:
            raise ConfigError(f"no (v, theta) decay configured for source {source!r}")
        return d

    def add(self, entries: Sequence[MemoryEntry]) -> int:
        """Store entries (new ids only; re-adding an id is a no-op). Returns how many were new."""
        if not entries:
            return 0
        ids = [e.id for e in entries]
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate memory ids in one add() call")
        step = max(1, min(int(self.client.get_max_batch_size()), 5000))  # 5000: SQLite variable limit on get(ids)
        existing: set[str] = set()
        for lo in range(0, len(ids), step):
            existing |= set(self.collection.get(ids=ids[lo : lo + step], include=[])["ids"])
        fresh = [e for e in entries if e.id not in existing]
        for lo in range(0, len(fresh), step):
            chunk = fresh[lo : lo + step]
            for e in chunk:
                self._decay_for(e.source)
            self.collection.add(
                ids=[e.id for e in chunk],
                documents=[e.text for e in chunk],
                metadatas=[{
                    "ticker": e.ticker, "source": e.source, "day": day_int(e.day), "ordinal": _ordinal(e.day),
                    "access": 0, "event_ids": ",".join(e.event_ids), **_flat(e.metadata),
                } for e in chunk],
            )
        return len(fresh)

    def mark_critical(self, ids: Sequence[str]) -> int:
        """Access counter: +1 (i.e. +5 importance) for each id the manager marks.
        Unknown ids are ignored and counted in the return value's complement."""
        ids = sorted(set(ids))
        if not ids:
            return 0
        got = self.collection.get(ids=ids, include=["metadatas"])
        metas = []
        for m in got["metadatas"]:
            m = dict(m)
            m["access"] = int(m.get("access", 0)) + 1
            metas.append(m)
        if got["ids"]:
            self.collection.update(ids=got["ids"], metadatas=metas)
        missing = len(ids) - len(got["ids"])
        if missing:
            log.warning("mark_critical: %d of %d ids are not in %s", missing, len(ids), self.collection.name)
        return len(got["ids"])

    def _score(self, mid: str, emb, doc: str, m: Mapping[str, Any], qn: np.ndarray, d_ord: int) -> ScoredMemory:
        rel = float(np.dot(emb, qn) / (np.linalg.norm(emb) or 1.0))
        age = d_ord - int(m["ordinal"])
        acc = int(m.get("access", 0))
        imp = self._decay_for(m["source"]).importance(age) + ACCESS_BONUS * acc
        rs, is_ = (rel + 1.0) / 2.0, min(imp / IMPORTANCE_SCALE, 1.0)
        return ScoredMemory(
            id=mid, source=m["source"], day=pd.Timestamp(dt.date.fromordinal(int(m["ordinal"]))), text=doc,
            relevancy=rel, importance=imp, relevancy_scaled=rs, importance_scaled=is_, score=rs + is_,
            access=acc, age_days=age, metadata={k_[2:]: v for k_, v in m.items() if k_.startswith("m_")},
        )

    def retrieve(self, query: str, day: Any, k: int = 5, sources: Sequence[str] | None = None) -> list[ScoredMemory]:
        """Top-``k`` memories visible on ``day`` (entries with day <= ``day``).

        Stage 1 takes the ``pool`` nearest neighbours by cosine. Any entry
        outside the pool has a scaled relevancy <= the pool's lowest, so it
        can only enter the top-k if its scaled importance exceeds
        ``kth_best_score - lowest_pool_relevancy``; stage 2 fetches exactly
        the entries that can (per source: young enough; plus every entry the
        manager marked) and everything is rescored exactly."""
        n = self.collection.count()
        if n == 0 or k <= 0:
            return []
        d_int, d_ord = day_int(day), _ordinal(day)
        base: dict[str, Any] = {"day": {"$lte": d_int}}
        if sources:
            base = {"$and": [base, {"source": {"$in": list(sources)}}]}
        qv = np.asarray(self.embedder([query])[0], dtype=np.float32)
        qn = qv / (np.linalg.norm(qv) or 1.0)
        want = min(n, max(self.pool, 4 * k))
        inc = ["embeddings", "documents", "metadatas"]
        # fast path: in a backtest the memory holds nothing after today, so the
        # unfiltered HNSW search (several times faster than a filtered one) is
        # tried first and only redone with the date filter if it saw the future
        res = None if sources else self.collection.query(query_embeddings=[qv], n_results=want, include=inc)
        if res is None or any(int(m["day"]) > d_int for m in res["metadatas"][0]):
            res = self.collection.query(query_embeddings=[qv], n_results=want, where=base, include=inc)
        scored: dict[str, ScoredMemory] = {}
        for i, e, doc, m in zip(res["ids"][0], res["embeddings"][0], res["documents"][0], res["metadatas"][0]):
            scored[i] = self._score(i, np.asarray(e, dtype=np.float32), doc, m, qn, d_ord)
        if len(scored) >= want:  # the pool did not exhaust the visible entries
            floor = min(s.relevancy_scaled for s in scored.values())
            fetched_thr = math.inf
            # pass 1 looks at young entries (scaled importance >= 0.5) to raise
            # the k-th best score cheaply; pass 2 fetches whatever could still beat it
            for first in (True, False):
                ranked = sorted((x.score for x in scored.values()), reverse=True)
                kth = ranked[k - 1] if len(ranked) >= k else 0.0
                thr = max(kth - floor, self.min_importance)
                if first:
                    thr = max(thr, 0.5)
                if thr >= fetched_thr:
                    break
                self._fetch_important(base, day, thr, sources, scored, qn, d_ord)
                fetched_thr = thr
        out = sorted(scored.values(), key=lambda s: (-round(s.score, 9), s.id))
        return out[:k]

    def _fetch_important(self, base: dict, day: Any, thr: float, sources: Sequence[str] | None,
                         scored: dict[str, ScoredMemory], qn: np.ndarray, d_ord: int) -> None:
        """Score every visible entry whose scaled importance can exceed ``thr``."""
        clauses: list[dict] = [{"access": {"$gt": 0}}]
        for src, dec in sorted(self.decay.items()):
            if sources and src not in sources:
                continue
            h = dec.horizon(thr)
            if h > 0:
                lo = day_int(pd.Timestamp(day) - pd.Timedelta(days=h))
                clauses.append({"$and": [{"source": src}, {"day": {"$gte": lo}}]})
        where = {"$and": [base, {"$or": clauses} if len(clauses) > 1 else clauses[0]]}
        ids = [i for i in self.collection.get(where=where, include=[])["ids"] if i not in scored]
        for lo in range(0, len(ids), 5000):
            got = self.collection.get(ids=ids[lo : lo + 5000], include=["embeddings", "documents", "metadatas"])
            for i, e, doc, m in zip(got["ids"], got["embeddings"], got["documents"], got["metadatas"]):
                scored[i] = self._score(i, np.asarray(e, dtype=np.float32), doc, m, qn, d_ord)
