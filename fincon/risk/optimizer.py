"""Mean-variance weights with cvxpy, reusable by strategies and the manager agent.

Two forms:

* ``long_only``: max  mu'w - gamma * w'Sigma w  s.t. sum(w) = 1, w >= 0.
* ``signed`` (FinCon portfolio form): max <w, mu> - gamma * <w, Sigma w> with
  w_n in [0, 1] for a "buy" asset, [-1, 0] for "sell" and exactly 0 for
  "hold"; the solution is then scaled linearly so that sum |w| = 1 (gross
  exposure one). When the optimum holds nothing (e.g. every "buy" has a
  negative mu) the answer is all zeros, i.e. all cash: a solver's round-off
  is never scaled up into a position.

The result always respects the bounds exactly: the solver's answer is
refined by an active-set step (exact KKT solve on the free assets, kept only
if it passes the optimality check), clipped to each direction's bounds, and
weights below ``ZERO_TOL`` (the bounds are the unit box, so that is
one-millionth of the portfolio) are set to 0.

A :class:`MeanVarianceProblem` is compiled for one covariance matrix; mu and
the direction bounds are cvxpy Parameters, so re-solving with new expected
returns or directions skips canonicalisation (DPP). A new Sigma means a new
problem (parameterising an n x n factor made every re-solve ~20x slower at
n=500 than rebuilding: see ``bench/optimizer.py``). The objective is divided
by gamma * mean(diag Sigma) before it reaches the solver (same argmax), so
daily-return-sized inputs do not drown in the solver's absolute tolerances.
Default solver OSQP (cvxpy's choice for this QP), run silently and without
OSQP's own polishing (OSQP 1.x prints "Polishing not needed" to stdout even
when not verbose; the refinement above replaces it), at a loose tolerance
since it only has to find the active set (a tight pass follows if the
refinement fails); CLARABEL also works. HiGHS is refused: it did not finish
on this problem even at n=50. gamma = 0 (a linear program) is solved in
closed form: the bound in the sign of mu, or the best mu for long-only.
"""

from __future__ import annotations

from typing import Literal, Mapping, Sequence

import cvxpy as cp
import numpy as np

Direction = Literal["buy", "sell", "hold"]
_BOUNDS = {"buy": (0.0, 1.0), "sell": (-1.0, 0.0), "hold": (0.0, 0.0)}
Form = Literal["long_only", "signed"]

#: weights with |w| below this are solver noise and become exactly 0
ZERO_TOL = 1e-6
#: a signed solution with gross exposure below this is "hold everything in cash"
MIN_GROSS = 1e-6


def _solver_options(solver: str, eps: float) -> dict:
    """Options that keep the solver quiet (nothing on stdout), with
    tolerance ``eps`` (on the scaled problem) for OSQP."""
    if solver.upper() != "OSQP":
        return {"verbose": False}
    import osqp

    pre_v1 = int(osqp.__version__.split(".")[0]) < 1
    # OSQP >= 1 prints "Polishing not needed ..." from C even with verbose off
    return {"verbose": False, ("polish" if pre_v1 else "polishing"): False, "eps_abs": eps, "eps_rel": eps}


def _refine(h: np.ndarray, q: np.ndarray, lb: np.ndarray, ub: np.ndarray, w0: np.ndarray,
            sum_one: bool, max_iter: int = 25) -> np.ndarray | None:
    """Exact solution of max q'w - w'Hw/2, lb <= w <= ub (and sum w = 1 if
    ``sum_one``) by a primal-dual active-set iteration started at the solver's
    point ``w0``. Returns None unless the result satisfies the KKT
    conditions to round-off (the caller then keeps the solver's answer)."""
    fixed = lb == ub
    w = np.clip(w0, lb, ub)
    g = q - h @ w
    nu = 0.0
    if sum_one:
        inside = w > 1e-4
        nu = float(np.mean(g[inside])) if inside.any() else float(np.max(g))
    g = g - nu
    prev = None
    scale = 1.0 + float(np.max(np.abs(q), initial=0.0))
    for _ in range(max_iter):
        trial = w + g
        at_lb = ~fixed & (trial < lb)
        at_ub = ~fixed & (trial > ub)
        sets = (at_lb.tobytes(), at_ub.tobytes())
        if sets == prev:
            break
        prev = sets
        free = ~(fixed | at_lb | at_ub)
        w = np.where(at_ub, ub, lb)  # fixed assets have lb == ub
        f = np.flatnonzero(free)
        rhs = q[f] - h[np.ix_(f, ~free)] @ w[~free]
        try:
            if sum_one:
                k = len(f)
                if k == 0:
                    return None
                kkt = np.zeros((k + 1, k + 1))
                kkt[:k, :k] = h[np.ix_(f, f)]
                kkt[:k, k] = kkt[k, :k] = 1.0
                sol = np.linalg.solve(kkt, np.append(rhs, 1.0 - w[~free].sum()))
                w[f], nu = sol[:k], float(sol[k])
            elif len(f):
                w[f] = np.linalg.solve(h[np.ix_(f, f)], rhs)
        except np.linalg.LinAlgError:
            return None
        g = q - h @ w - nu
    else:
        return None
    tol = 1e-8 * scale
    free = ~(fixed | at_lb | at_ub)
    ok = (
        np.isfinite(w).all()
        and (w >= lb - 1e-9).all() and (w <= ub + 1e-9).all()
        and (np.abs(g[free]) <= tol).all()
        and (g[at_lb] <= tol).all() and (g[at_ub] >= -tol).all()
        and (not sum_one or abs(w.sum() - 1.0) <= 1e-9)
    )
    return np.clip(w, lb, ub) if ok else None


class MeanVarianceProblem:
    """A compiled mean-variance QP for a fixed covariance ``sigma``.

    After :meth:`solve`, ``last_solution`` holds the optimal weights before
    the signed form's scaling to gross exposure one (bounds enforced, noise
    zeroed), for callers that want the optimiser's own exposure."""

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
        if form not in ("long_only", "signed"):
            raise ValueError(f"unknown form {form!r}")
        sigma = np.asarray(sigma, dtype=float)
        n = sigma.shape[0]
        if sigma.shape != (n, n):
            raise ValueError("sigma must be a square matrix")
        self.n, self.form, self.solver = n, form, solver
        self.last_solution: np.ndarray | None = None
        sym = (sigma + sigma.T) / 2.0
        diag = float(np.mean(np.abs(np.diag(sym)))) if n else 0.0
        # objective / (gamma * diag): the quadratic term is O(1) for the solver
        self._scale = float(risk_aversion) * diag
        self._lp = not self._scale > 0  # gamma = 0 or Sigma = 0: a linear program
        self._h = 2.0 * sym / diag if not self._lp else np.zeros((n, n))
        if self._lp:
            return  # solved in closed form, no solver needed
        self._w = cp.Variable(n)
        self._mu = cp.Parameter(n)
        risk = cp.quad_form(self._w, cp.psd_wrap(sym / diag))
        objective = cp.Maximize(self._mu @ self._w - risk)
        if form == "long_only":
            constraints = [cp.sum(self._w) == 1, self._w >= 0]
        else:
            self._lb = cp.Parameter(n)
            self._ub = cp.Parameter(n)
            constraints = [self._w >= self._lb, self._w <= self._ub]
        self._problem = cp.Problem(objective, constraints)
        # a loose first pass finds the active set, which _refine then solves
        # exactly; the tight pass runs only when that refinement fails
        self._options = _solver_options(solver, 1e-3)
        self._tight_options = _solver_options(solver, 1e-7)

    def _bounds(self, directions: Sequence[Direction] | None) -> tuple[np.ndarray, np.ndarray]:
        if self.form == "long_only":
            return np.zeros(self.n), np.full(self.n, np.inf)
        if directions is None or len(directions) != self.n:
            raise ValueError("the signed form needs one direction per asset")
        try:
            bounds = np.array([_BOUNDS[d] for d in directions], dtype=float).reshape(self.n, 2)
        except KeyError as exc:
            raise ValueError(f"direction must be buy, sell or hold, not {exc.args[0]!r}") from None
        return bounds[:, 0], bounds[:, 1]

    def _solve_lp(self, mu: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> np.ndarray:
        if self.form == "signed":
            return np.where(mu > 0, ub, np.where(mu < 0, lb, 0.0))
        best = mu == mu.max()
        return best / best.sum()

    def solve(self, mu: np.ndarray, directions: Sequence[Direction] | None = None) -> np.ndarray:
        mu = np.asarray(mu, dtype=float)
        if mu.shape != (self.n,):
            raise ValueError(f"expected mu of shape ({self.n},), got {mu.shape}")
        if not np.isfinite(mu).all():
            raise ValueError("mu must be finite")
        lb, ub = self._bounds(directions)
        if self._lp:
            w = self._solve_lp(mu, lb, ub)
        else:
            q = mu / self._scale
            self._mu.value = q
            if self.form == "signed":
                self._lb.value, self._ub.value = lb, ub
            for options in (self._options, self._tight_options):
                self._problem.solve(solver=self.solver, warm_start=True, **options)
                if self._w.value is None or self._problem.status not in ("optimal", "optimal_inaccurate"):
                    raise RuntimeError(f"mean-variance solve failed: {self._problem.status}")
                w0 = np.asarray(self._w.value, dtype=float)
                w = _refine(self._h, q, lb, ub, w0, sum_one=self.form == "long_only")
                if w is not None:
                    break
            else:
                w = np.clip(w0, lb, ub)  # the tight solver answer, bounds enforced below
        w = np.clip(w, lb, ub)
        w = np.where(np.abs(w) < ZERO_TOL, 0.0, w) + 0.0  # + 0.0 turns -0.0 into 0.0
        self.last_solution = w
        if self.form == "long_only":
            s = w.sum()
            return w / s if s > 0 else np.full(self.n, 1.0 / self.n)
        gross = np.abs(w).sum()
        return w / gross if gross >= MIN_GROSS else np.zeros(self.n)


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
