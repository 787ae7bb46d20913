"""Mean-variance weights, reusable by strategies and the manager agent.

Two forms:

* ``long_only``: max  mu'w - gamma * w'Sigma w  s.t. sum(w) = 1, w >= 0.
* ``signed`` (FinCon portfolio form): max <w, mu> - gamma * <w, Sigma w> with
  w_n in [0, 1] for a "buy" asset, [-1, 0] for "sell" and exactly 0 for
  "hold"; the solution is then scaled linearly so that sum |w| = 1 (gross
  exposure one). When the optimum holds nothing (e.g. every "buy" has a
  negative mu) the answer is all zeros, i.e. all cash: a solver's round-off
  is never scaled up into a position.

The result always respects the bounds exactly: every answer comes out of an
active-set step (exact KKT solve on the free assets, kept only if it passes
the optimality check), clipped to each direction's bounds, and weights below
``ZERO_TOL`` (the bounds are the unit box, so that is one-millionth of the
portfolio) are set to 0.

How the active set is found (``method="auto"``, the default): a re-solve
first tries the previous solution's active set (warm start); otherwise, or
if that does not pass the check, a primal-dual interior point in numpy
(Mehrotra predictor-corrector, one dense Cholesky per iteration) runs until
its point names the active set (3-8 iterations on the problems tried, at
n = 8 as at n = 1000), which the exact step then solves. Should neither
pass the KKT check (e.g. Sigma singular on the free assets), cvxpy solves
the problem as it always did: OSQP at a loose tolerance then the exact step,
a tight pass if that fails. ``method="cvxpy"`` goes straight to that path.
Both paths end in the same exact step on the same active set, so their
weights agree to round-off (tests/test_optimizer.py checks 1e-6 against the
pre-numpy solver); at n = 500 the numpy path is 4-40x faster on a first
solve and 6-1000x on a re-solve, signed at the low end and long-only at the
high one, where OSQP converges slowly (``bench/optimizer.py`` prints both).
The numpy path keeps the BLAS to ``BLAS_THREADS`` threads while it runs: a
500 x 500 Cholesky gains little from a second thread, and on a loaded
2-core machine OpenBLAS's spinning threads made it ~10x slower.

A :class:`MeanVarianceProblem` is set up for one covariance matrix; re-solve
it with new expected returns or directions. The cvxpy problem is compiled
only when first needed, with mu and the direction bounds as cvxpy Parameters
so its re-solves skip canonicalisation (DPP). A new Sigma means a new problem
(parameterising an n x n factor made every cvxpy re-solve ~20x slower at
n=500 than rebuilding). The objective is divided by gamma * mean(diag Sigma)
before any solver sees it (same argmax), so daily-return-sized inputs do not
drown in absolute tolerances. cvxpy runs OSQP (its choice for this QP)
silently and without OSQP's own polishing (OSQP 1.x prints "Polishing not
needed" to stdout even when not verbose; the exact step replaces it);
CLARABEL also works. HiGHS is refused: it did not finish on this problem
even at n=50. gamma = 0 (a linear program) is solved in closed form: the
bound in the sign of mu, or the best mu for long-only.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Literal, Mapping, Sequence

import numpy as np

Direction = Literal["buy", "sell", "hold"]
_BOUNDS = {"buy": (0.0, 1.0), "sell": (-1.0, 0.0), "hold": (0.0, 0.0)}
Form = Literal["long_only", "signed"]
Method = Literal["auto", "cvxpy"]

#: weights with |w| below this are solver noise and become exactly 0
ZERO_TOL = 1e-6
#: a signed solution with gross exposure below this is "hold everything in cash"
MIN_GROSS = 1e-6
#: BLAS threads while the numpy path runs (None: leave the BLAS as it is)
BLAS_THREADS: int | None = 1
#: the interior point hands its point to the exact step at these complementarity gaps
_IP_HANDOFFS = (1e-2, 1e-5, 1e-9)


def _solver_options(solver: str, eps: float) -> dict:
    """Options that keep the solver quiet (nothing on stdout), with
    tolerance ``eps`` (on the scaled problem) for OSQP."""
    if solver.upper() != "OSQP":
        return {"verbose": False}
    import osqp

    pre_v1 = int(osqp.__version__.split(".")[0]) < 1
    # OSQP >= 1 prints "Polishing not needed ..." from C even with verbose off
    return {"verbose": False, ("polish" if pre_v1 else "polishing"): False, "eps_abs": eps, "eps_rel": eps}


_blas_controller: Any = None  # a threadpoolctl controller, or False without threadpoolctl


@contextlib.contextmanager
def _blas_threads() -> Iterator[None]:
    """BLAS_THREADS threads for the BLAS inside the block (threadpoolctl
    comes with scikit-learn)."""
    global _blas_controller
    if BLAS_THREADS is None:
        yield
        return
    if _blas_controller is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - scikit-learn depends on it
            _blas_controller = False
        else:
            _blas_controller = ThreadpoolController()
    if not _blas_controller:
        yield
        return
    with _blas_controller.limit(limits=BLAS_THREADS, user_api="blas"):
        yield


def _free_solve(hff: np.ndarray, rhs: np.ndarray, sum_one: bool, total: float) -> tuple[np.ndarray, float]:
    """Solve H_ff x = rhs - nu (nu = 0 unless ``sum_one``, when it makes
    sum(x) = total): Cholesky, or LU on the bordered system if H_ff is not
    numerically positive definite. Raises LinAlgError when both fail."""
    # scipy.linalg is imported where a solve needs it, not with the module: every
    # team run imports this module (the portfolio protocol) and most never solve
    # (one ticker), and the import costs a CLI process ~0.25 s
    import scipy.linalg

    k = len(rhs)
    try:
        c = scipy.linalg.cho_factor(hff, check_finite=False)
        x = scipy.linalg.cho_solve(c, rhs, check_finite=False)
        if not sum_one:
            return x, 0.0
        y = scipy.linalg.cho_solve(c, np.ones(k), check_finite=False)
        if y.sum() > 0:
            nu = (x.sum() - total) / y.sum()
            return x - nu * y, float(nu)
    except (np.linalg.LinAlgError, ValueError):
        pass
    if not sum_one:
        return np.linalg.solve(hff, rhs), 0.0
    kkt = np.zeros((k + 1, k + 1))
    kkt[:k, :k] = hff
    kkt[:k, k] = kkt[k, :k] = 1.0
    sol = np.linalg.solve(kkt, np.append(rhs, total))
    return sol[:k], float(sol[k])


def _refine(
    h: np.ndarray,
    q: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    w0: np.ndarray,
    sum_one: bool,
    max_iter: int = 25,
    nu: float | None = None,
) -> np.ndarray | None:
    """Exact solution of max q'w - w'Hw/2, lb <= w <= ub (and sum w = 1 if
    ``sum_one``) by a primal-dual active-set iteration started at the point
    ``w0`` (and multiplier ``nu`` of the sum, if known). Returns None unless
    the result satisfies the KKT conditions to round-off, or when the active
    sets cycle."""
    fixed = lb == ub
    w = np.clip(w0, lb, ub)
    g = q - h @ w
    if not sum_one:
        nu = 0.0
    elif nu is None:
        inside = w > 1e-4
        nu = float(np.mean(g[inside])) if inside.any() else float(np.max(g))
    g = g - nu
    seen: set[bytes] = set()
    prev = None
    scale = 1.0 + float(np.max(np.abs(q), initial=0.0))
    for _ in range(max_iter):
        trial = w + g
        at_lb = ~fixed & (trial < lb)
        at_ub = ~fixed & (trial > ub)
        sets = at_lb.tobytes() + at_ub.tobytes()
        if sets == prev:
            break
        if sets in seen:
            return None  # cycling: the caller tries another way
        seen.add(sets)
        prev = sets
        free = ~(fixed | at_lb | at_ub)
        w = np.where(at_ub, ub, lb)  # fixed assets have lb == ub
        w[free] = 0.0
        f = np.flatnonzero(free)
        if sum_one and not len(f):
            return None
        if len(f):
            rhs = q[f] - (h @ w)[f]
            try:
                w[f], nu = _free_solve(h[np.ix_(f, f)], rhs, sum_one, 1.0 - w.sum())
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


def _interior_point(
    h: np.ndarray,
    q: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    sum_one: bool,
    gaps: Sequence[float] | None = None,
    max_iter: int = 60,
) -> Iterator[tuple[np.ndarray, float]]:
    """Primal-dual interior point (Mehrotra predictor-corrector) for
    min w'Hw/2 - q'w, lb <= w <= ub (ub may be +inf; lb < ub), and sum w = 1
    if ``sum_one``. Yields (w, nu) each time the mean complementarity and the
    residuals fall below the next of ``gaps``; stops early when a
    factorisation fails or the iteration budget runs out."""
    import scipy.linalg  # as in _free_solve

    n = len(q)
    has_ub = np.isfinite(ub)
    u = np.where(has_ub, ub, 0.0)
    if sum_one:
        w = np.full(n, 1.0 / n)
    else:
        w = np.where(has_ub, (lb + u) / 2.0, lb + 1.0)
    z = np.ones(n)  # multiplier of w >= lb
    y = has_ub.astype(float)  # multiplier of w <= ub (0 where there is none)
    nu = 0.0
    ones = np.ones(n)
    pairs = n + int(has_ub.sum())
    scale = 1.0 + float(np.max(np.abs(q), initial=0.0))
    gaps = list(_IP_HANDOFFS if gaps is None else gaps)
    for _ in range(max_iter):
        a = w - lb
        s = np.where(has_ub, u - w, 1.0)
        rd = h @ w - q - z + y + nu
        rp = w.sum() - 1.0 if sum_one else 0.0
        mu = (a @ z + s @ y) / pairs
        while gaps and mu < gaps[0] and np.max(np.abs(rd)) < gaps[0] * scale and abs(rp) < gaps[0]:
            gaps.pop(0)
            yield w, nu
        if not gaps:
            return
        m = h.copy()
        m.flat[:: n + 1] += z / a + y / s
        try:
            c = scipy.linalg.cho_factor(m, overwrite_a=True, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            return
        e: Any = None  # M^-1 1, solved with the first direction

        def direction(tz: np.ndarray, ty: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
            # targets tz, ty for the changes of a*z and s*y; Newton step of the KKT system
            nonlocal e
            rhs = -rd + tz / a - ty / s
            if sum_one and e is None:  # M^-1 1 for the sum's multiplier, in the same solve
                dw, e = scipy.linalg.cho_solve(c, np.column_stack([rhs, ones]), check_finite=False).T
            else:
                dw = scipy.linalg.cho_solve(c, rhs, check_finite=False)
            dnu = 0.0
            if sum_one:
                dnu = (dw.sum() + rp) / e.sum()
                dw = dw - dnu * e
            return dw, (tz - z * dw) / a, (ty + y * dw) / s, dnu

        def longest(dw: np.ndarray, dz: np.ndarray, dy: np.ndarray) -> float:
            step = 1.0
            for v, dv in ((a, dw), (z, dz), (s, -dw), (y, dy)):
                neg = dv < 0
                if v is s or v is y:
                    neg &= has_ub
                if neg.any():
                    step = min(step, float(np.min(-v[neg] / dv[neg])))
            return step

        dw, dz, dy, _ = direction(-a * z, -s * y)
        step = longest(dw, dz, dy)
        mu_aff = ((a + step * dw) @ (z + step * dz) + ((s - step * dw) * has_ub) @ (y + step * dy)) / pairs
        sigma = (mu_aff / mu) ** 3
        dw, dz, dy, dnu = direction(sigma * mu - a * z - dw * dz, (sigma * mu - s * y + dw * dy) * has_ub)
        step = min(1.0, 0.99 * longest(dw, dz, dy))
        w, z, y, nu = w + step * dw, z + step * dz, y + step * dy, nu + step * dnu
        if not (np.isfinite(w).all() and np.isfinite(z).all() and np.isfinite(y).all()):
            return


class MeanVarianceProblem:
    """A mean-variance QP for a fixed covariance ``sigma``.

    ``method="auto"`` solves in numpy (warm-started active set, else interior
    point + exact active-set step) with cvxpy (``solver``) as the fallback;
    ``"cvxpy"`` always uses cvxpy. After :meth:`solve`, ``last_solution``
    holds the optimal weights before the signed form's scaling to gross
    exposure one (bounds enforced, noise zeroed), for callers that want the
    optimiser's own exposure, and ``last_path`` says which way it was found:
    "closed_form" (gamma = 0), "warm_start", "interior_point" or "cvxpy"."""

    def __init__(
        self,
        sigma: np.ndarray,
        *,
        form: Form = "long_only",
        risk_aversion: float = 1.0,
        solver: str = "OSQP",
        method: Method = "auto",
    ) -> None:
        if solver.upper() == "HIGHS":
            raise ValueError("HiGHS does not solve this QP in reasonable time; use OSQP or CLARABEL")
        if risk_aversion < 0:
            raise ValueError("risk_aversion must be >= 0")
        if form not in ("long_only", "signed"):
            raise ValueError(f"unknown form {form!r}")
        if method not in ("auto", "cvxpy"):
            raise ValueError(f"method must be auto or cvxpy, not {method!r}")
        sigma = np.asarray(sigma, dtype=float)
        n = sigma.shape[0]
        if sigma.shape != (n, n):
            raise ValueError("sigma must be a square matrix")
        self.n, self.form, self.solver, self.method = n, form, solver, method
        self.last_solution: np.ndarray | None = None
        self.last_path: str | None = None
        sym = (sigma + sigma.T) / 2.0
        diag = float(np.mean(np.abs(np.diag(sym)))) if n else 0.0
        # objective / (gamma * diag): the quadratic term is O(1) for the solver
        self._scale = float(risk_aversion) * diag
        self._lp = not self._scale > 0  # gamma = 0 or Sigma = 0: a linear program
        self._h = 2.0 * sym / diag if not self._lp else np.zeros((n, n))
        self._warm: np.ndarray | None = None  # the last exact solution, for the next solve
        self._problem: Any = None  # the cvxpy problem, compiled when first needed

    def _compile(self) -> None:
        import cvxpy as cp

        n = self.n
        self._w = cp.Variable(n)
        self._mu = cp.Parameter(n)
        risk = cp.quad_form(self._w, cp.psd_wrap(self._h / 2.0))
        objective = cp.Maximize(self._mu @ self._w - risk)
        if self.form == "long_only":
            constraints = [cp.sum(self._w) == 1, self._w >= 0]
        else:
            self._lb = cp.Parameter(n)
            self._ub = cp.Parameter(n)
            constraints = [self._w >= self._lb, self._w <= self._ub]
        self._problem = cp.Problem(objective, constraints)
        # a loose first pass finds the active set, which _refine then solves
        # exactly; the tight pass runs only when that refinement fails
        self._options = _solver_options(self.solver, 1e-3)
        self._tight_options = _solver_options(self.solver, 1e-7)

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

    def _solve_numpy(self, q: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> np.ndarray | None:
        """Warm start from the last solution, else interior point; None if
        neither ends in a point that passes the KKT check."""
        sum_one = self.form == "long_only"
        h = self._h
        if self._warm is not None:
            w = _refine(h, q, lb, ub, self._warm, sum_one, max_iter=8)
            if w is not None:
                self.last_path = "warm_start"
                return w
        live = np.flatnonzero(lb < ub)  # holds are fixed at 0: no part in the others' problem
        if not len(live):
            self.last_path = "interior_point"
            return np.zeros(self.n)
        h_live = h if len(live) == self.n else h[np.ix_(live, live)]
        for w_live, nu in _interior_point(h_live, q[live], lb[live], ub[live], sum_one):
            w0 = np.zeros(self.n)
            w0[live] = w_live
            w = _refine(h, q, lb, ub, w0, sum_one, nu=nu)
            if w is not None:
                self.last_path = "interior_point"
                return w
        return None

    def _solve_cvxpy(self, q: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> np.ndarray:
        if self._problem is None:
            self._compile()
        self._mu.value = q
        if self.form == "signed":
            self._lb.value, self._ub.value = lb, ub
        self.last_path = "cvxpy"
        for options in (self._options, self._tight_options):
            self._problem.solve(solver=self.solver, warm_start=True, **options)
            if self._w.value is None or self._problem.status not in ("optimal", "optimal_inaccurate"):
                raise RuntimeError(f"mean-variance solve failed: {self._problem.status}")
            w0 = np.asarray(self._w.value, dtype=float)
            w = _refine(self._h, q, lb, ub, w0, sum_one=self.form == "long_only")
            if w is not None:
                return w
        return np.clip(w0, lb, ub)  # the tight solver answer, bounds enforced below

    def solve(self, mu: np.ndarray, directions: Sequence[Direction] | None = None) -> np.ndarray:
        mu = np.asarray(mu, dtype=float)
        if mu.shape != (self.n,):
            raise ValueError(f"expected mu of shape ({self.n},), got {mu.shape}")
        if not np.isfinite(mu).all():
            raise ValueError("mu must be finite")
        lb, ub = self._bounds(directions)
        if self._lp:
            w = self._solve_lp(mu, lb, ub)
            self.last_path = "closed_form"
        else:
            q = mu / self._scale
            fast: np.ndarray | None = None
            if self.method == "auto":
                with _blas_threads():
                    fast = self._solve_numpy(q, lb, ub)
            w = fast if fast is not None else self._solve_cvxpy(q, lb, ub)
            self._warm = w
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
    method: Method = "auto",
) -> np.ndarray:
    """One-shot: long-only weights, or the signed FinCon form when
    ``directions`` (one per asset, in the order of ``mu``) is given."""
    if isinstance(directions, Mapping):
        directions = list(directions.values())
    form: Form = "signed" if directions is not None else "long_only"
    problem = MeanVarianceProblem(sigma, form=form, risk_aversion=risk_aversion, solver=solver, method=method)
    return problem.solve(mu, directions)
