"""One analyst's memory of one ticker, advanced once per decision day.

Glue for the agent layer: each day :meth:`AnalystMemory.step` runs the
working-memory step on the events that became visible (optionally only the
analyst's own sources: a news analyst, a filings analyst, an earnings-call
analyst) and retrieves the top-k memories for a query built from the
analyst's profile and task (FinCon A.13). :meth:`reward` is the manager's
access counter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import pandas as pd

from fincon.data.events.generator import NAMES
from fincon.data.events.model import Event
from fincon.data.events.store import EventStore, EventView
from fincon.memory.procedural import MemoryEntry, ScoredMemory
from fincon.memory.working import LexiconSummariser, Summariser, WorkingMemory


def profile_query(profile: str, ticker: str, day: Any, task: str | None = None) -> str:
    """The retrieval query: the agent's profile plus its task."""

    name, sector = NAMES.get(ticker, (ticker, "its industry"))
    task = task or (
        f"decide whether to buy, sell or hold {ticker} at the close of {pd.Timestamp(day).date()}; "
        f"focus on demand, revenue, margins, guidance and risks"
    )
    return f"Profile: {profile} covering {name} ({ticker}), {sector}. Task: {task}."


@dataclass(frozen=True)
class DayMemory:
    date: pd.Timestamp
    new_events: tuple[Event, ...]
    query: str
    top: tuple[ScoredMemory, ...]
    #: the memory entries written today (what became visible since the last
    #: step), so an agent can read today's news even if older memories outrank it
    new_entries: tuple[MemoryEntry, ...] = ()

    @property
    def evidence(self) -> tuple[str, ...]:
        """Memory ids, for ``Decision.evidence``."""
        return tuple(m.id for m in self.top)


class AnalystMemory:
    def __init__(
        self,
        memory_store,
        events: EventStore,
        agent: str,
        ticker: str,
        profile: str | None = None,
        summariser: Summariser | None = None,
        sources: Sequence[str] | None = None,
        k: int = 5,
        task: str | None = None,
    ):
        self.events = events
        self.agent, self.ticker = agent, ticker
        self.profile = profile or agent
        self.task = task
        self.k = k
        self.sources = tuple(sources) if sources else None
        self.procedural = memory_store.procedural(agent, ticker)
        self.working = WorkingMemory(
            summariser or LexiconSummariser(resolve=events.audio_path), self.procedural, sources=self.sources
        )

    def step(self, view: EventView) -> DayMemory:
        """Write what became visible by ``view``'s decision time (the day's
        events, as the market view serves them) and retrieve the day's top-k."""
        entries = self.working.step(view, self.ticker)
        stored = {eid for x in entries for eid in x.event_ids}
        new = tuple(
            e for e in view.events(self.ticker, sources=self.sources, last=len(stored) or None) if e.id in stored
        )
        q = profile_query(self.profile, self.ticker, view.date, self.task)
        top = tuple(self.procedural.retrieve(q, view.date, k=self.k, sources=self.sources))
        return DayMemory(view.date, new, q, top, tuple(entries))

    def reward(self, memory_ids: Sequence[str]) -> int:
        """Manager feedback: these memories were critical to a profitable decision (+5 each)."""
        return self.procedural.mark_critical(memory_ids)
