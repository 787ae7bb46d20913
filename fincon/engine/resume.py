"""Between sessions: the book a forward step keeps after each one, and what a step that resumes a
saved strategy takes up (the decisions already recorded, fed to the broker as they were; the state
the strategy saved). The loop that uses them is :mod:`fincon.engine.backtest`."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from fincon.errors import FinconError
from fincon.strategies.base import Decision


@dataclass(frozen=True)
class Book:
    """Cash and shares at a close, each holding's cost basis (backtrader's
    average price of the open position) and the target weights waiting for
    the next open: what a forward journal keeps after each session (it saves
    to JSON and loads back)."""

    cash: float
    shares: Mapping[str, float]
    pending: Mapping[str, float] | None = None
    basis: Mapping[str, float] | None = None

    def value(self, prices: Mapping[str, float]) -> float:
        return self.cash + sum(n * prices[t] for t, n in self.shares.items())

    def to_json(self) -> dict[str, Any]:
        return {"cash": self.cash, "shares": dict(sorted(self.shares.items())),
                "pending": None if self.pending is None else dict(sorted(self.pending.items())),
                "basis": None if self.basis is None else dict(sorted(self.basis.items()))}  # fmt: skip


@dataclass(frozen=True)
class Resume:
    """A forward step that takes up a saved strategy instead of asking it again for every session.

    ``decisions`` are the window's first sessions' entries as ``decisions.jsonl`` recorded them: the
    loop feeds each to the broker as the strategy's decision of that day (the book comes out as it
    was, fill for fill) and asks the strategy only from the session after them, once it has loaded
    the state saved in ``state`` (None: the strategy is asked every day). ``save``: where the strategy's
    state is saved after the run, for the next step. ``missed``: the days of sessions the journal
    sealed missed: no step ran, so the strategy is not asked on them and every position is kept (a
    later replay that asked would trade on decisions never sealed)."""

    decisions: tuple[Mapping[str, Any], ...] = ()
    state: Path | None = None
    save: Path | None = None
    missed: frozenset[dt.date] = frozenset()


class StateError(FinconError):
    """A forward step's saved strategy state could not be loaded: the step asks the strategy again from
    the first session instead (the state is a cache)."""


def recorded_decision(entry: Mapping[str, Any]) -> Decision | None:
    """The :class:`Decision` a ``decisions.jsonl`` entry records (None: the day kept every position)."""
    if "weights" not in entry:
        return None
    return Decision(
        weights=dict(entry["weights"]),
        rationale=entry.get("rationale", ""),
        evidence=tuple(entry.get("evidence", ())),
        actions=dict(entry.get("actions", {})),
        record=dict(entry.get("record", {})),
    )
