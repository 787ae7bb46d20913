"""Equal weight: 1/N in every ticker, rebalanced every ``rebalance_every`` days
(the paper's equal-weighted ETF baseline)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from fincon.strategies.base import Decision, Strategy
from fincon.validation import Settings


class EqualWeightParams(Settings):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings
    rebalance_every: int = Field(21, ge=1, description="trading days between rebalances")


class EqualWeight(Strategy):
    name = "equal-weight"
    Params = EqualWeightParams

    def __init__(self, params: EqualWeightParams | None = None):
        self.params = params or EqualWeightParams()

    def decide(self, view):
        if view.day % self.params.rebalance_every:
            return None
        w = 1.0 / len(view.tickers)
        return Decision(weights={t: w for t in view.tickers}, rationale="rebalance to 1/N")
