"""Event loaders behind one interface.

Every loader turns one provider's format into :class:`~fincon.data.events.model.Event`
objects: ``load(tickers, start, end) -> list[Event]``. Offline loaders read a
directory; online loaders (EDGAR, yfinance, Alpaca) keep an on-disk cache and
raise :class:`fincon.errors.SourceUnavailable` within seconds when the
provider cannot be reached and nothing is cached.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import pandas as pd

from fincon.data.events.model import MARKET_TZ, Event


@runtime_checkable
class EventLoader(Protocol):
    """What every loader implements."""

    name: str

    def load(self, tickers: Sequence[str], start: Any = None, end: Any = None) -> list[Event]:
        """Events about ``tickers`` published in ``[start, end]`` (dates, inclusive)."""
        ...


def window(start: Any = None, end: Any = None) -> Callable[[Event], bool]:
    """Whether an event was published on a market-local day in ``[start, end]``
    (dates, inclusive; None: open). The bounds are read once here: a loader
    tests every event of a corpus, and a pandas Timestamp per event cost 4 %
    of the fast test tier."""
    lo = _first_day_from(start)
    hi = None if end is None else pd.Timestamp(end).date()

    def keep(e: Event) -> bool:
        day = e.published_at.astimezone(MARKET_TZ).date()
        return (lo is None or day >= lo) and (hi is None or day <= hi)

    return keep


def _first_day_from(start: Any) -> dt.date | None:
    """The first day whose midnight is not before ``start`` (a bound with a time of day starts the next day)."""
    if start is None:
        return None
    t = pd.Timestamp(start)
    return t.date() if t == t.normalize() else t.date() + dt.timedelta(days=1)
