"""Mean-variance solve time at N assets (default 500): the path before the
numpy solver (cvxpy + OSQP + exact refinement, kept below verbatim as
``BaselineProblem``) against today's default (numpy interior point + exact
active set, cvxpy as fallback), measured side by side in one run.

First solve = set-up + solve (what the markowitz strategy and the FinCon
manager pay: a new Sigma each decision); re-solve = new expected returns on
the same problem object, (a) mu scaled by 1.1..1.5 as this bench always did
and (b) mu perturbed by 20 % noise per asset. Ratios are baseline / new;
max |dw| compares the two answers on the same inputs.

    .venv/bin/python bench/optimizer.py [--n 500] [--days 750] [--repeat 3] [--solver OSQP]
"""

from __future__ import annotations

import argparse
import time
from typing import Sequence

import cvxpy as cp
import numpy as np

from fincon.risk.optimizer import _BOUNDS, MIN_GROSS, ZERO_TOL, Direction, Form, MeanVarianceProblem

# --------------------------------------------------------------------------
# Baseline: fincon/risk/optimizer.py before the numpy path, unchanged but for
# the class name (constants imported above are unchanged).
# --------------------------------------------------------------------------


def _solver_options(solver: str, eps: float) -> dict:
    """Options that keep the solver quiet (nothing on stdout), with
    tolerance ``eps`` (on the scaled problem) for OSQP."""
    if solver.upper() != "OSQP":
        return {"verbose": False}
    import osqp

    pre_v1 = int(osqp.__version__.split(".")[0]) < 1
    # OSQP >= 1 prints "Polishing not needed ..." from C even with verbose off
    return {"verbose": False, ("polish" if pre_v1 else "polishing"): False, "eps_abs": eps, "eps_rel": eps}


def _refine(
    h: np.ndarray, q: np.ndarray, lb: np.ndarray, ub: np.ndarray, w0: np.ndarray, sum_one: bool, max_iter: int = 25
) -> np.ndarray | None:
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
        and (w >= lb - 1e-9).all()
        and (w <= ub + 1e-9).all()
        and (np.abs(g[free]) <= tol).all()
        and (g[at_lb] <= tol).all()
        and (g[at_ub] >= -tol).all()
        and (not sum_one or abs(w.sum() - 1.0) <= 1e-9)
    )
    return np.clip(w, lb, ub) if ok else None


class BaselineProblem:
    """Today's MeanVarianceProblem (cvxpy + OSQP, then the exact refinement), as of ee772bb.

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


# --------------------------------------------------------------------------


def _market(n: int, days: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    factors = rng.normal(0, 0.01, (days, 5)) @ rng.normal(0, 1, (5, n))
    returns = factors + rng.normal(0, 0.015, (days, n))
    return np.cov(returns.T), returns.mean(axis=0)


def _measure(make, mu: np.ndarray, directions, repeat: int, resolves: dict[str, list]) -> tuple[dict, dict]:
    """Median first solve (set-up + solve) over ``repeat`` fresh problems, then
    the median re-solve of each scenario on the last one; with the answers
    and, for the new path, which way they were found."""
    times, answers = {}, {}
    firsts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        problem = make()
        w = problem.solve(mu, directions)
        firsts.append(time.perf_counter() - t0)
    times["first solve"] = (float(np.median(firsts)), getattr(problem, "last_path", ""))
    answers["first solve"] = w
    for name, mus in resolves.items():
        dts, paths, ws = [], set(), []
        for m in mus:
            t0 = time.perf_counter()
            ws.append(problem.solve(m, directions))
            dts.append(time.perf_counter() - t0)
            paths.add(getattr(problem, "last_path", ""))
        times[name] = (float(np.median(dts)), "+".join(sorted(paths)))
        answers[name] = np.array(ws)
    return times, answers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--days", type=int, default=750)
    ap.add_argument("--repeat", type=int, default=3, help="first solves per form and path (median shown)")
    ap.add_argument("--solver", default="OSQP", help="cvxpy solver of the baseline (and of the new path's fallback)")
    args = ap.parse_args()
    sigma, mu = _market(args.n, args.days)
    rng = np.random.default_rng(1)
    resolves = {
        "re-solve, mu x1.1..1.5": [mu * (1 + 0.1 * k) for k in range(1, 6)],
        "re-solve, mu + 20% noise": [mu * rng.normal(1, 0.2, args.n) for _ in range(5)],
    }
    # import / first-call warm-up of both paths, not timed
    BaselineProblem(np.eye(3), solver=args.solver).solve(np.zeros(3))
    MeanVarianceProblem(np.eye(3), solver=args.solver).solve(np.ones(3))
    print(
        f"N = {args.n} assets, Sigma from {args.days} days; baseline = cvxpy {args.solver} + refinement "
        f"(before the numpy path), new = MeanVarianceProblem default; first solve median of {args.repeat}, "
        f"re-solve median of 5"
    )
    print(f"{'form':9s}  {'measure':25s} {'baseline':>10s} {'new':>9s} {'ratio':>7s}  {'max |dw|':>8s}  new path")
    for form in ("long_only", "signed"):
        directions = ["buy" if m > 0 else "sell" for m in mu] if form == "signed" else None
        old, old_w = _measure(
            lambda: BaselineProblem(sigma, form=form, solver=args.solver), mu, directions, args.repeat, resolves
        )
        new, new_w = _measure(
            lambda: MeanVarianceProblem(sigma, form=form, solver=args.solver), mu, directions, args.repeat, resolves
        )
        for name in old:
            diff = float(np.max(np.abs(old_w[name] - new_w[name])))
            (t_old, _), (t_new, path) = old[name], new[name]
            print(
                f"{form:9s}  {name:25s} {t_old * 1e3:7.1f} ms {t_new * 1e3:6.1f} ms {t_old / t_new:6.1f}x  "
                f"{diff:8.1e}  {path}"
            )
        nonzero = int((np.abs(new_w["first solve"]) > 1e-6).sum())
        print(f"{'':9s}  ({nonzero} nonzero weights)")


if __name__ == "__main__":
    main()
