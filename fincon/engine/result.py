"""What one run of the loop produced, in memory: the run directory is written from it
(:mod:`fincon.engine.record`), a forward step seals its book."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from fincon.engine.resume import Book
from fincon.risk.metrics import Metrics


@dataclass
class BacktestResult:
    """Everything a run produced, in memory (the run directory is written
    from this by :mod:`fincon.engine.rundir`)."""

    strategy: str
    tickers: tuple[str, ...]
    dates: pd.DatetimeIndex
    values: np.ndarray
    positions: pd.DataFrame  # date, ticker, shares, weight (held at the close)
    trades: pd.DataFrame  # date, ticker, side, size, price, value, commission
    decisions: list[dict[str, Any]]
    metrics: Metrics
    stopped: str | None = None
    rejected_orders: int = 0
    #: every order: date, ticker, side, requested, filled, price, commission, status, reason
    orders: pd.DataFrame | None = None
    #: the fills matched first in, first out (open lots marked at the last close): round_trips.csv and
    #: the win rate, one frame (rebuilt from trades.csv's rounded sizes it held lots of 5.5e-07 shares)
    round_trips: pd.DataFrame | None = None
    #: broker.charge_llm: the model spend charged on each day (None when not charged)
    llm_cost: np.ndarray | None = None
    #: what the short positions paid to borrow their shares (``Costs.borrow``), taken from the cash
    borrow_paid: float = 0.0
    #: what slippage took from the fills: each fill's price against the price it slipped from, times its size
    slippage_paid: float = 0.0
    scaled_days: int = 0
    strategy_summary: dict[str, Any] = field(default_factory=dict)
    analyzers: dict[str, Any] = field(default_factory=dict)
    #: the book at the last close: cash, shares and (a forward step) the targets pending for the next open
    book: "Book | None" = None

    @property
    def commission_paid(self) -> float:
        """The orders' commission, summed over the fills (``trades.csv``'s column)."""
        return float(self.trades["commission"].sum()) if len(self.trades) else 0.0

    @property
    def costs_paid(self) -> float:
        """Commission, slippage and the borrow fee: what the costs took from the book."""
        return self.commission_paid + self.slippage_paid + self.borrow_paid

    @property
    def equity(self) -> pd.Series:
        return pd.Series(self.values, index=self.dates, name="value")


ORDER_COLUMNS = ["date", "ticker", "side", "requested", "filled", "price", "commission", "status", "reason"]


def orders_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Every order of a run (orders.csv): one still open at the run's end is ``unfilled`` (nothing
    filled) or ``partial``, with why."""
    out = []
    for r in rows:
        if r["status"] == "submitted" and not r["filled"]:
            reason = "; ".join(x for x in (r["reason"], "the run ended before it filled") if x)
            r = {**r, "status": "unfilled", "reason": reason}
        elif r["status"] == "submitted":
            r = {**r, "status": "partial"}
        out.append(r)
    return pd.DataFrame(out, columns=ORDER_COLUMNS)


def position(weight: float) -> dict[str, Any]:
    """A ticker's place in the book: side (long, short, flat) and size (|weight|)."""
    w = float(weight)
    if abs(w) < 1e-9:
        return {"side": "flat", "size": 0.0}
    return {"side": "long" if w > 0 else "short", "size": round(abs(w), 6)}


def positions_frame(dates: pd.DatetimeIndex, tickers, held: np.ndarray, closes: np.ndarray, values: np.ndarray):
    """positions.csv: each day's shares held at the close per ticker and their weight of the book."""
    rows = [
        (d.strftime("%Y-%m-%d"), tk, held[i, j], held[i, j] * closes[i, j] / values[i])
        for i, d in enumerate(dates)
        for j, tk in enumerate(tickers)
    ]
    return pd.DataFrame(rows, columns=["date", "ticker", "shares", "weight"])
