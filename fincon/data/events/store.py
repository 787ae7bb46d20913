"""Point-in-time access to events.

:class:`EventStore` keeps every loaded event sorted by publication time.
:meth:`EventStore.view_at` hands an agent an :class:`EventView` for one
decision day; the view has no method that returns an event published at or
after that day's decision time (16:00 New York), just as
:class:`fincon.data.view.MarketView` has none that reaches tomorrow's prices.
"""

from __future__ import annotations

import bisect
import datetime as dt
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from fincon.data.events.model import SOURCES, Event, decision_cutoff
from fincon.errors import DataError


class EventStore:
    """All events of a run, sorted by ``(published_at, id)``.

    ``root`` is the directory relative audio paths are resolved against.
    Duplicate ids are an error (a loader bug or two overlapping sources).
    """

    def __init__(self, events: Iterable[Event], root: Path | None = None):
        evs = sorted(events, key=lambda e: (e.published_at, e.id))
        seen: set[str] = set()
        for e in evs:
            if e.id in seen:
                raise DataError(f"duplicate event id {e.id}: ids must be unique across loaders")
            seen.add(e.id)
        self._events: tuple[Event, ...] = tuple(evs)
        self._times = [e.published_at for e in evs]
        #: ticker -> positions of its events in ``_events`` (ascending): a view's
        #: per-ticker query reads only that ticker's events, not the whole corpus
        self._by_ticker: dict[str, list[int]] = {}
        for i, e in enumerate(evs):
            self._by_ticker.setdefault(e.ticker, []).append(i)
        self.root = Path(root) if root else None

    def __len__(self) -> int:
        return len(self._events)

    @property
    def planted(self) -> tuple[str, ...]:
        """The planted look-ahead of a generated corpus (``fincon data sample --planted news:0.3``: its
        items carry the next day's return by design), as each item's metadata says it; () for none."""
        return tuple(sorted({str(p) for e in self._events if (p := e.metadata.get("planted"))}))

    @property
    def tickers(self) -> tuple[str, ...]:
        return tuple(sorted({e.ticker for e in self._events}))

    def audio_path(self, event: Event) -> Path | None:
        if not event.audio:
            return None
        p = Path(event.audio)
        if not p.is_absolute() and self.root is not None:
            p = self.root / p
        return p

    def _upto(self, cutoff: dt.datetime) -> int:
        return bisect.bisect_left(self._times, cutoff)

    def view_at(self, day: Any) -> "EventView":
        """Everything an agent may know at ``day``'s decision time."""
        return EventView(self, pd.Timestamp(day).normalize())

    def all_events(self) -> tuple[Event, ...]:
        """Every event (for generators, exporters and tests, never for agents)."""
        return self._events


class EventView:
    """The events visible at the decision time of ``date``."""

    __slots__ = ("_store", "date", "cutoff", "_n")

    def __init__(self, store: EventStore, date: pd.Timestamp):
        self._store = store
        self.date = date
        self.cutoff = decision_cutoff(date)
        self._n = store._upto(self.cutoff)

    def __len__(self) -> int:
        return self._n

    def events(
        self,
        ticker: str | None = None,
        sources: Sequence[str] | None = None,
        since: Any = None,
        last: int | None = None,
    ) -> list[Event]:
        """Visible events, oldest first. ``since`` (a day) keeps only those
        published after the decision time of that day, i.e. the ones that
        are new compared with what was visible on ``since``."""
        if sources is not None:
            bad = [s for s in sources if s not in SOURCES]
            if bad:
                raise DataError(f"unknown source {bad[0]!r}; use one of {', '.join(SOURCES)}")
        lo = 0
        if since is not None:
            lo = min(self._store._upto(decision_cutoff(since)), self._n)
        evs = self._store._events
        if ticker is None:
            picked: Iterable[Event] = evs[lo : self._n]
        else:
            pos = self._store._by_ticker.get(ticker, [])
            picked = (evs[i] for i in pos[bisect.bisect_left(pos, lo) : bisect.bisect_left(pos, self._n)])
        out = [e for e in picked if sources is None or e.source in sources]
        return out[-last:] if last else out

    def latest(self, ticker: str, source: str) -> Event | None:
        evs = self.events(ticker, [source], last=1)
        return evs[0] if evs else None

    def audio_path(self, event: Event) -> Path | None:
        return self._store.audio_path(event)
