"""Within-episode risk control: rho_t and the alert rule (FinCon 3.1.2).

Each day t the run's daily PnL so far (simple returns of the portfolio value,
in %) gives rho_t = CVaR_alpha of that sample (the paper uses alpha = 1%).
An alert fires when

* rho_t < rho_{t-1} (the lower tail just got worse: the newest PnL fell into
  it), or
* today's PnL is negative,

and the manager then takes a risk-averse stance for its next decision.

Few observations: with n PnLs and alpha = 1%, the empirical alpha-quantile is
the smallest PnL until n >= 100, so rho_t is the worst day so far. That is
the honest empirical lower tail, used as is. No alert can fire before
``min_obs`` PnLs exist (default 2: rho_{t-1} needs at least one PnL, and one
more to compare; the negative-PnL rule has the same floor so both rules start
together). The rule needs nothing after t: it reads only the values up to t.

Pure math (no agent imports): the agents read :class:`AlertState`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fincon.risk.metrics import conditional_value_at_risk

DEFAULT_ALPHA = 0.01
DEFAULT_MIN_OBS = 2


@dataclass(frozen=True)
class AlertState:
    """The risk state on one day, as the manager and ``decisions.jsonl`` see it."""

    alert: bool
    rho: float | None  # CVaR_alpha of the PnL so far, % (None before any PnL)
    rho_prev: float | None
    pnl: float | None  # today's PnL, % (None on the first day)
    reason: str  # "" when no alert

    def as_dict(self) -> dict:
        r = lambda x: None if x is None else round(float(x), 6)  # noqa: E731
        return {
            "alert": self.alert,
            "rho": r(self.rho),
            "rho_prev": r(self.rho_prev),
            "pnl": r(self.pnl),
            "reason": self.reason,
        }


@dataclass
class CvarAlert:
    """Feed it the portfolio value at each close (``update``) and read the
    state; one instance per run or episode."""

    alpha: float = DEFAULT_ALPHA
    min_obs: int = DEFAULT_MIN_OBS
    _values: list[float] = field(default_factory=list)
    _rho: float | None = None

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 0.5:
            raise ValueError("alpha must be in (0, 0.5)")
        if self.min_obs < 1:
            raise ValueError("min_obs must be >= 1")

    def update(self, value: float) -> AlertState:
        """Add the value at today's close; return today's state."""
        self._values.append(float(value))
        v = np.asarray(self._values)
        if len(v) < 2:
            return AlertState(False, None, None, None, "")
        pnl = 100.0 * (v[1:] / v[:-1] - 1.0)
        rho = conditional_value_at_risk(pnl, self.alpha)
        prev, self._rho = self._rho, rho
        today = float(pnl[-1])
        if len(pnl) < self.min_obs:
            return AlertState(False, rho, prev, today, "")
        reasons = []
        if prev is not None and rho < prev - 1e-12:
            reasons.append(f"CVaR fell from {prev:.3f}% to {rho:.3f}%")
        if today < -LOSS_NOISE:  # a flat day's -2.2e-14 % (two equal closes through float) halved a short
            reasons.append(f"today's PnL is {today:.3f}%")
        return AlertState(bool(reasons), rho, prev, today, "; ".join(reasons))


#: a day's PnL (percent) above minus this is no loss: the float noise of a flat book's two closes
LOSS_NOISE = 1e-9


def alert_series(values, alpha: float = DEFAULT_ALPHA, min_obs: int = DEFAULT_MIN_OBS) -> list[AlertState]:
    """The state of every day of a value series (for plots and tests)."""
    tracker = CvarAlert(alpha, min_obs)
    return [tracker.update(x) for x in values]
