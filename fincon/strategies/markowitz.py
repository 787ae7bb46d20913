"""Markowitz mean-variance on a rolling lookback.

Estimates, from the last ``lookback`` daily simple returns visible on the
decision day:

* Sigma: Ledoit-Wolf shrinkage covariance (scikit-learn), well conditioned
  even when the lookback is short relative to the number of assets;
* mu: the sample mean shrunk toward the cross-sectional grand mean,
  mu = (1 - delta) * mean_i + delta * mean(mean_i), delta = ``mu_shrinkage``
  (a James-Stein-style shrinkage; delta=0 is the raw sample mean). Sample
  means are the noisiest input of mean-variance, so shrinking them keeps the
  weights from chasing last quarter's winner.

Then solves :func:`fincon.risk.optimizer.MeanVarianceProblem` in the
long-only form (default) or the FinCon signed form, where each asset's
direction is given in ``directions`` (tickers left out are "hold"; a ticker
not in the run is a :class:`~fincon.errors.ConfigError` when the run starts)
or, with ``auto``, is buy when the shrunk mu is positive and sell otherwise.
With fewer than ``lookback`` days of history (the data start too late for
the warm-up) it estimates from the days it has and warns once per run.
"""

from __future__ import annotations

import logging
from typing import Literal

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from fincon.errors import ConfigError
from fincon.risk.optimizer import MeanVarianceProblem
from fincon.strategies.base import Decision, RunContext, Strategy
from fincon.validation import Settings

log = logging.getLogger(__name__)


class MarkowitzParams(Settings):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings
    lookback: int = Field(126, ge=10, description="trading days of returns used for mu and Sigma")
    rebalance_every: int = Field(21, ge=1, description="trading days between rebalances")
    mu_shrinkage: float = Field(0.5, ge=0.0, le=1.0, description="delta of the mean shrinkage")
    risk_aversion: float = Field(1.0, ge=0.0, description="gamma in mu'w - gamma w'Sigma w")
    form: Literal["long_only", "signed"] = "long_only"
    directions: dict[str, Literal["buy", "sell", "hold"]] | Literal["auto"] = "auto"
    solver: Literal["OSQP", "CLARABEL"] = "OSQP"

    @model_validator(mode="after")
    def _directions_need_signed(self) -> "MarkowitzParams":
        # the long-only form reads no direction: {MSFT: sell} was dropped without a word and the run held
        # MSFT long, its config.yaml naming the sells (found in review)
        if self.directions != "auto" and self.form != "signed":
            raise ValueError(
                "directions are read by form: signed only (long_only holds every asset long): set form: signed"
            )
        return self


def estimate_moments(returns: np.ndarray, mu_shrinkage: float) -> tuple[np.ndarray, np.ndarray]:
    """(mu, Sigma) from a days x assets matrix of simple returns."""
    # imported here: scikit-learn (with scipy.stats) takes ~1.2 s to import, and every run imports
    # this module through the strategy registry, most of them to run another strategy
    from sklearn.covariance import LedoitWolf

    sample_mu = returns.mean(axis=0)
    mu = (1.0 - mu_shrinkage) * sample_mu + mu_shrinkage * sample_mu.mean()
    sigma = LedoitWolf().fit(returns).covariance_
    return mu, sigma


class Markowitz(Strategy):
    name = "markowitz"
    Params = MarkowitzParams

    def __init__(self, params: MarkowitzParams | None = None):
        self.params = params or MarkowitzParams()
        self.warmup = self.params.lookback
        self._warned_short = False

    def check_inputs(self, tickers, first, last) -> None:
        directions = self.params.directions
        if isinstance(directions, dict):
            unknown = [t for t in directions if t not in tickers]
            if unknown:
                raise ConfigError(
                    f"strategy_params.markowitz.directions names {', '.join(unknown)}, "
                    f"not among this run's tickers ({', '.join(tickers)})"
                )

    def start(self, ctx: RunContext) -> None:
        self._warned_short, self._pending = False, False
        self.check_inputs(ctx.tickers, ctx.start, ctx.end)

    def decide(self, view):
        p = self.params
        # every rebalance_every-th session, as sealed journals replay it; a rebalance without three closes
        # is asked again the next session (it waited rebalance_every in cash; found in review)
        if view.day % p.rebalance_every and not getattr(self, "_pending", False):
            return None
        closes = view.matrix("close", p.lookback + 1)
        self._pending = len(closes) < 3
        if self._pending:
            return None
        returns = closes[1:] / closes[:-1] - 1.0
        if len(returns) < p.lookback and not self._warned_short:
            self._warned_short = True
            log.warning(
                "only %d days of returns up to %s for lookback=%d; estimating mu and Sigma "
                "from those (start later or use a shorter lookback)",
                len(returns),
                view.date.date(),
                p.lookback,
            )
        mu, sigma = estimate_moments(returns, p.mu_shrinkage)
        tickers = view.tickers
        directions = None
        if p.form == "signed":
            if p.directions == "auto":
                directions = ["buy" if m > 0 else "sell" for m in mu]
            else:
                directions = [p.directions.get(t, "hold") for t in tickers]
        problem = MeanVarianceProblem(sigma, form=p.form, risk_aversion=p.risk_aversion, solver=p.solver)
        w = problem.solve(mu, directions)
        return Decision(
            weights={t: float(x) for t, x in zip(tickers, w)},
            # each mu named by its ticker: the weights are read by ticker (a journal's sorted), mu was in run order
            rationale=f"mean-variance on {len(returns)} days; mu "
            + ", ".join(f"{t} {m:.5f}" for t, m in zip(tickers, mu)),
        )
