"""Point-in-time view of the market.

:class:`MarketData` holds aligned numpy arrays for every ticker (including
warm-up history before the backtest window). :meth:`MarketData.view_at`
returns a :class:`MarketView` that can only slice rows ``<= t``: a strategy
holding a view of day t has no API that reaches day t+1. The arrays handed
out are read-only, so a strategy cannot corrupt the data either.

The run's event corpus (news, filings, analyst notes, calls) travels with
the prices: :attr:`MarketView.events` is the store cut at day t's decision
time (:meth:`EventStore.view_at`), so the point-in-time rule for events is
enforced here, in one place, as it is for prices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

import numpy as np
import pandas as pd

from fincon.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from fincon.data.events.store import EventStore, EventView

FIELDS = ("open", "high", "low", "close", "volume")


@dataclass(frozen=True)
class PortfolioSnapshot:
    """The book at the decision time of a day (before that day's orders)."""

    value: float
    cash: float
    shares: Mapping[str, float] = field(default_factory=dict)
    weights: Mapping[str, float] = field(default_factory=dict)


class MarketData:
    """Aligned, validated prices for several tickers on a common calendar.

    ``frames`` are per-ticker frames with columns open/high/low/close/volume
    (already adjusted: ``close`` is Adj Close). ``first_index`` is the row of
    the first backtest day; rows before it are warm-up history. ``events``
    is the run's event corpus (None for a strategy that reads no news).
    """

    def __init__(self, frames: Mapping[str, pd.DataFrame], first_index: int = 0, events: "EventStore | None" = None):
        tickers = tuple(frames)
        dates = frames[tickers[0]].index
        for t in tickers[1:]:
            if not frames[t].index.equals(dates):
                raise ValueError("MarketData frames must share one calendar; align them first")
        self.tickers = tickers
        self.dates = pd.DatetimeIndex(dates)
        self.first_index = int(first_index)
        arrays = {}
        for f in FIELDS:
            a = np.column_stack([frames[t][f].to_numpy(dtype=float) for t in tickers])
            a.setflags(write=False)
            arrays[f] = a
        self._arrays = arrays
        self._col = {t: i for i, t in enumerate(tickers)}
        self.events = events

    def with_events(self, events: "EventStore | None") -> "MarketData":
        """The same bars (shared, not copied) with another event corpus: each
        strategy of a run reads the corpus its parameters name."""
        other = object.__new__(MarketData)
        other.__dict__.update(self.__dict__)
        other.events = events
        return other

    def __len__(self) -> int:
        return len(self.dates)

    @property
    def n_days(self) -> int:
        """Days in the backtest window (warm-up excluded)."""
        return len(self.dates) - self.first_index

    def frame(self, ticker: str) -> pd.DataFrame:
        """Backtest-window bars of one ticker (for the engine's data feeds)."""
        i = self._col[ticker]
        sl = slice(self.first_index, None)
        return pd.DataFrame({f: self._arrays[f][sl, i] for f in FIELDS}, index=self.dates[sl])

    def view_at(self, t: int, portfolio: PortfolioSnapshot | None = None) -> "MarketView":
        """The market as known at the close of absolute row ``t``."""
        if not 0 <= t < len(self.dates):
            raise IndexError(t)
        return MarketView(self, t, portfolio)


class MarketView:
    """What a strategy may see on decision day ``date``: rows up to ``t``."""

    __slots__ = ("_data", "_t", "portfolio")

    def __init__(self, data: MarketData, t: int, portfolio: PortfolioSnapshot | None = None):
        self._data = data
        self._t = t
        self.portfolio = portfolio or PortfolioSnapshot(value=0.0, cash=0.0)

    @property
    def tickers(self) -> tuple[str, ...]:
        return self._data.tickers

    @property
    def date(self) -> pd.Timestamp:
        """The decision day (its close is the latest price visible)."""
        return self._data.dates[self._t]

    @property
    def day(self) -> int:
        """0 on the first backtest day (negative would be warm-up)."""
        return self._t - self._data.first_index

    @property
    def available(self) -> int:
        """Number of rows visible, warm-up included."""
        return self._t + 1

    def dates(self, n: int | None = None) -> pd.DatetimeIndex:
        lo = 0 if n is None else max(0, self._t + 1 - n)
        return self._data.dates[lo : self._t + 1]

    def history(self, ticker: str, field: str = "close", n: int | None = None) -> np.ndarray:
        """Last ``n`` values (all if None) of ``field`` for ``ticker``, ending today."""
        lo = 0 if n is None else max(0, self._t + 1 - n)
        return self._data._arrays[field][lo : self._t + 1, self._data._col[ticker]]

    def matrix(self, field: str = "close", n: int | None = None) -> np.ndarray:
        """Last ``n`` rows of ``field`` for all tickers (days x tickers)."""
        lo = 0 if n is None else max(0, self._t + 1 - n)
        return self._data._arrays[field][lo : self._t + 1]

    @property
    def events(self) -> "EventView":
        """The run's events visible at this day's decision time (nothing
        published after it); an error for a run without an event corpus."""
        store = self._data.events
        if store is None:
            raise ConfigError("this run has no event corpus; a strategy that reads news needs one (--events DIR)")
        return store.view_at(self.date)

    def price(self, ticker: str) -> float:
        """Today's (adjusted) close."""
        return float(self._data._arrays["close"][self._t, self._data._col[ticker]])

    def closes(self, n: int | None = None) -> pd.DataFrame:
        """Adjusted closes as a frame (dates x tickers), ending today."""
        return pd.DataFrame(self.matrix("close", n), index=self.dates(n), columns=list(self.tickers))

    def returns(self, n: int | None = None) -> pd.DataFrame:
        """Simple daily returns over the last ``n`` days (n+1 closes), ending today."""
        closes = self.closes(None if n is None else n + 1)
        return closes.pct_change().iloc[1:]
