"""Event loaders behind one interface.

Every loader turns one provider's format into :class:`~fincon.data.events.model.Event`
objects: ``load(tickers, start, end) -> list[Event]``. Offline loaders read a
directory; online loaders (EDGAR, yfinance, Alpaca) keep an on-disk cache and
raise :class:`fincon.errors.SourceUnavailable` within seconds when the
provider cannot be reached and nothing is cached.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

import pandas as pd

from fincon.data.events.model import MARKET_TZ, Event


@runtime_checkable
class EventLoader(Protocol):
    """What every loader implements."""

    name: str

    def load(self, tickers: Sequence[str], start: Any = None, end: Any = None) -> list[Event]:
        """Events about ``tickers`` published in ``[start, end]`` (dates, inclusive)."""
        ...


def in_window(e: Event, start: Any, end: Any) -> bool:
    local = pd.Timestamp(e.published_at).tz_convert(MARKET_TZ).tz_localize(None).normalize()
    if start is not None and local < pd.Timestamp(start):
        return False
    if end is not None and local > pd.Timestamp(end):
        return False
    return True
