"""Mean-variance weights with cvxpy, reusable by strategies and the manager agent.

Two forms:

* ``long_only``: max  mu'w - gamma * w'Sigma w  s.t. sum(w) = 1, w >= 0.
* ``signed`` (FinCon portfolio form): max <w, mu> - gamma * <w, Sigma w> with
  w_n in [0, 1] for a "buy" asset, [-1, 0] for "sell" and 0 for "hold"; the
  solution is then scaled linearly so that sum |w| = 1 (gross exposure one).

A :class:`MeanVarianceProblem` is compiled for one covariance matrix; mu and
the direction bounds are cvxpy Parameters, so re-solving with new expected
returns or directions skips canonicalisation (DPP). A new Sigma means a new
problem (parameterising an n x n factor made every re-solve ~20x slower at
n=500 than rebuilding: see ``bench/optimizer.py``). Default solver OSQP
(cvxpy's choice for this QP); CLARABEL also works. HiGHS is refused: it did
not finish on this problem even at n=50.
"""

from __future__ import annotations

from typing import Literal, Mapping, Sequence

import cvxpy as cp
import numpy as np

Direction = Literal["buy", "sell", "hold"]
_BOUNDS = {"buy": (0.0, 1.0), "sell": (-1.0, 0.0), "hold": (0.0, 0.0)}
Form = Literal["long_only", "signed"]


class MeanVarianceProblem:
    """A compiled mean-variance QP for a fixed covariance ``sigma``."""

    def __init__(
        self,
        sigma: np.ndarray,
        *,
        form: Form = "long_only",
        risk_aversion: float = 1.0,
        solver: str = "OSQP",
    ) -> None:
        if solver.upper() == "HIGHS":
            raise ValueError("HiGHS does not solve this QP in reasonable time; use OSQP or CLARABEL")
        if risk_aversion < 0:
            raise ValueError("risk_aversion must be >= 0")
        sigma = np.asarray(sigma, dtype=float)
        n = sigma.shape[0]
        if sigma.shape != (n, n):
            raise ValueError("sigma must be a square matrix")
        self.n, self.form, self.solver = n, form, solver
        sym = (sigma + sigma.T) / 2.0
        self._w = cp.Variable(n)
        self._mu = cp.Parameter(n)
        risk = cp.quad_form(self._w, cp.psd_wrap(sym))
        objective = cp.Maximize(self._mu @ self._w - float(risk_aversion) * risk)
        if form == "long_only":
            constraints = [cp.sum(self._w) == 1, self._w >= 0]
        elif form == "signed":
            self._lb = cp.Parameter(n)
            self._ub = cp.Parameter(n)
            constraints = [self._w >= self._lb, self._w <= self._ub]
        else:
            raise ValueError(f"unknown form {form!r}")
        self._problem = cp.Problem(objective, constraints)

    def solve(self, mu: np.ndarray, directions: Sequence[Direction] | None = None) -> np.ndarray:
        mu = np.asarray(mu, dtype=float)
        if mu.shape != (self.n,):
            raise ValueError(f"expected mu of shape ({self.n},), got {mu.shape}")
        self._mu.value = mu
        if self.form == "signed":
            if directions is None or len(directions) != self.n:
                raise ValueError("the signed form needs one direction per asset")
            try:
                bounds = np.array([_BOUNDS[d] for d in directions])
            except KeyError as exc:
                raise ValueError(f"direction must be buy, sell or hold, not {exc.args[0]!r}") from None
            self._lb.value, self._ub.value = bounds[:, 0], bounds[:, 1]
        self._problem.solve(solver=self.solver, warm_start=True)
        if self._w.value is None or self._problem.status not in ("optimal", "optimal_inaccurate"):
            raise RuntimeError(f"mean-variance solve failed: {self._problem.status}")
        w = np.asarray(self._w.value, dtype=float)
        if self.form == "long_only":
            w = np.clip(w, 0.0, None)
            w = np.where(w < 1e-7, 0.0, w)
            s = w.sum()
            return w / s if s > 0 else np.full(self.n, 1.0 / self.n)
        w = np.where(np.abs(w) < 1e-7, 0.0, w)
        gross = np.abs(w).sum()
        return w / gross if gross > 0 else np.zeros(self.n)


def mean_variance_weights(
    mu: np.ndarray,
    sigma: np.ndarray,
    *,
    directions: Sequence[Direction] | Mapping[str, Direction] | None = None,
    risk_aversion: float = 1.0,
    solver: str = "OSQP",
) -> np.ndarray:
    """One-shot: long-only weights, or the signed FinCon form when
    ``directions`` (one per asset, in the order of ``mu``) is given."""
    if isinstance(directions, Mapping):
        directions = list(directions.values())
    form: Form = "signed" if directions is not None else "long_only"
    problem = MeanVarianceProblem(sigma, form=form, risk_aversion=risk_aversion, solver=solver)
    return problem.solve(mu, directions)
