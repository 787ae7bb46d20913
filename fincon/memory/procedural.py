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

The ranking is exact (equal to scoring every visible entry) and is computed
in numpy from the collection's columns kept in the process by
:mod:`fincon.memory.index`, which also holds the texts and metadata of the
entries; chromadb is the store they are written to and reloaded from (at
once, or held back until ``flush`` with ``write_behind``). An entry whose importance can't lift it into the
top-k even at cosine 1 is never compared with the query.
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
from fincon.memory.index import ACCESS_BONUS, IMPORTANCE_SCALE, index_for

log = logging.getLogger(__name__)

__all__ = [
    "ACCESS_BONUS",
    "DEFAULT_DECAY",
    "IMPORTANCE_SCALE",
    "Decay",
    "MemoryEntry",
    "ProceduralMemory",
    "ScoredMemory",
    "collection_name",
]


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
    "news": Decay(70.0, 0.90),  # half-life ~6.6 days
    "analyst_note": Decay(75.0, 0.95),  # ~13.5 days
    "10-Q": Decay(80.0, 0.98),  # ~34 days
    "earnings_call": Decay(80.0, 0.98),
    "10-K": Decay(90.0, 0.995),  # ~138 days
    "reflection": Decay(60.0, 0.97),
    "decision": Decay(60.0, 0.97),  # the manager's own settled decisions
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
    """One analyst's memory of one ticker.

    ``write_behind``: entries and access counters are written to chromadb at
    :meth:`flush` (the run's owner calls it every few weeks and at the end),
    not by each ``add`` / ``mark_critical``; queries answer the same either way
    (:mod:`fincon.memory.index`). Off by default: every call writes through."""

    def __init__(
        self,
        client,
        agent: str,
        ticker: str,
        embedder,
        decay: Mapping[str, Decay] | None = None,
        write_behind: bool = False,
    ):
        self.client = client
        self.agent, self.ticker = agent, ticker
        self.embedder = embedder
        self.decay = dict(DEFAULT_DECAY if decay is None else decay)
        self.write_behind = write_behind
        self.collection = open_collection(client, collection_name("proc", agent, ticker), embedder)
        self.index = index_for(self.collection)

    def __len__(self) -> int:
        self.index.load(self.collection)
        return self.index.n

    def _decay_for(self, source: str) -> Decay:
        d = self.decay.get(source)
        if d is None:
            raise ConfigError(f"no (v, theta) decay configured for source {source!r}")
        return d

    def flush(self) -> int:
        """Write what is held back to chromadb; returns rows + counters written."""
        if not self.index.pending():
            return 0
        return self.index.flush(self.collection, max(1, min(int(self.client.get_max_batch_size()), 5000)))

    def add(self, entries: Sequence[MemoryEntry]) -> int:
        """Store entries (new ids only; re-adding an id is a no-op). Returns how many were new."""
        if not entries:
            return 0
        ids = [e.id for e in entries]
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate memory ids in one add() call")
        # the loaded index holds every id of the collection, so it answers
        # "already stored?" without a chromadb read: most daily adds repeat
        # entries already stored (on a 3-ticker rules run, 339 of 495)
        self.index.load(self.collection)
        fresh = [e for e in entries if e.id not in self.index.rows]
        if not fresh:
            return 0
        for e in fresh:
            self._decay_for(e.source)
        # embedded once here (what chromadb would do with the same function)
        # so the index gets the same vectors without reading them back
        embs = self.embedder([e.text for e in fresh])
        metas = [
            {
                "ticker": e.ticker,
                "source": e.source,
                "day": day_int(e.day),
                "ordinal": _ordinal(e.day),
                "access": 0,
                "event_ids": ",".join(e.event_ids),
                **_flat(e.metadata),
            }
            for e in fresh
        ]
        self.index.append([e.id for e in fresh], embs, metas, [e.text for e in fresh], saved=False)
        if not self.write_behind:
            self.flush()
        return len(fresh)

    def mark_critical(self, ids: Sequence[str]) -> int:
        """Access counter: +1 (i.e. +5 importance) for each id the manager marks.
        Unknown ids are ignored and counted in the return value's complement."""
        ids = sorted(set(ids))
        if not ids:
            return 0
        self.index.load(self.collection)
        known = [i for i in ids if i in self.index.rows]
        self.index.set_access(known, [self.index.access(self.index.rows[i]) + 1 for i in known])
        if not self.write_behind:
            self.flush()
        missing = len(ids) - len(known)
        if missing:
            log.warning("mark_critical: %d of %d ids are not in %s", missing, len(ids), self.collection.name)
        return len(known)

    def retrieve(self, query: str, day: Any, k: int = 5, sources: Sequence[str] | None = None) -> list[ScoredMemory]:
        """Top-``k`` memories visible on ``day`` (entries with day <= ``day``),
        optionally of the given ``sources`` only; best first, ties broken by id.

        Exact: the same ranking as scoring every visible entry (see
        :meth:`fincon.memory.index.ScoreIndex.top`). Texts and metadata come
        from the index, which holds what chromadb holds (or will, after the
        next :meth:`flush`)."""
        if k <= 0:
            return []
        self.index.load(self.collection)
        d_ord = _ordinal(day)
        qv = np.asarray(self.embedder([query])[0], dtype=np.float32)
        qn = qv / (np.linalg.norm(qv) or 1.0)
        top = self.index.top(qn, d_ord, k, self.decay, list(sources) if sources else None)
        out = []
        for mid, row, rel, imp, score in top:
            m = self.index.meta(row)
            o = int(m["ordinal"])
            rs, is_ = (rel + 1.0) / 2.0, min(imp / IMPORTANCE_SCALE, 1.0)
            out.append(
                ScoredMemory(
                    id=mid,
                    source=m["source"],
                    day=pd.Timestamp(dt.date.fromordinal(o)),
                    text=self.index.docs[row],
                    relevancy=rel,
                    importance=imp,
                    relevancy_scaled=rs,
                    importance_scaled=is_,
                    score=score,
                    access=self.index.access(row),
                    age_days=d_ord - o,
                    metadata={k_[2:]: v for k_, v in m.items() if k_.startswith("m_")},
                )
            )
        return out
