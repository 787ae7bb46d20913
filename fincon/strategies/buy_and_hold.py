"""Buy-and-hold: enter at the first day's close (equal split across tickers)
and hold to the last day. The benchmark every other strategy is shown next to."""

from __future__ import annotations

from pydantic import ConfigDict

from fincon.strategies.base import Decision, Strategy
from fincon.validation import Settings


class BuyAndHoldParams(Settings):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings


class BuyAndHold(Strategy):
    name = "buy-and-hold"
    Params = BuyAndHoldParams

    def __init__(self, params: BuyAndHoldParams | None = None):
        self.params = params or BuyAndHoldParams()

    def decide(self, view):
        if view.day != 0:
            return None
        w = 1.0 / len(view.tickers)
        return Decision(weights={t: w for t in view.tickers}, rationale="enter once and hold")
