"""SMA crossover, the worked example of a strategy.

Long (1/N of the portfolio per ticker) while the ``fast`` simple moving
average of the close is above the ``slow`` one; flat (or short with
``allow_short``) otherwise. It only answers on days a signal changes, so it
trades exactly like backtrader's classic SMA-crossover sample.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, model_validator

from fincon.strategies.base import Decision, Strategy
from fincon.validation import Settings


class SmaCrossParams(Settings):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings
    fast: int = Field(10, ge=1)
    slow: int = Field(30, ge=2)
    allow_short: bool = False

    @model_validator(mode="after")
    def _fast_below_slow(self):
        if self.fast >= self.slow:
            raise ValueError(f"fast ({self.fast}) must be smaller than slow ({self.slow})")
        return self


class SmaCross(Strategy):
    name = "sma-cross"
    Params = SmaCrossParams

    def __init__(self, params: SmaCrossParams | None = None):
        self.params = params or SmaCrossParams()
        self.warmup = self.params.slow
        self._signal: dict[str, int] = {}

    def start(self, ctx) -> None:
        self._signal = {}

    def decide(self, view):
        p = self.params
        size = 1.0 / len(view.tickers)
        weights = {}
        for t in view.tickers:
            closes = view.history(t, "close", p.slow)
            if len(closes) < p.slow:
                continue
            fast = closes[-p.fast :].mean()
            slow = closes.mean()
            signal = 1 if fast > slow else (-1 if p.allow_short else 0)
            if self._signal.get(t) != signal:
                self._signal[t] = signal
                weights[t] = signal * size
        return Decision(weights=weights, rationale=f"SMA{p.fast}/SMA{p.slow} cross") if weights else None
