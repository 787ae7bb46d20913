"""Mean-variance solve time at N assets (default 500), OSQP vs CLARABEL.

First solve = build + canonicalise + solve; re-solve = new expected returns
on the compiled problem (the path a daily manager takes when only mu moves).

    .venv/bin/python bench/optimizer.py [--n 500]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fincon.risk.optimizer import MeanVarianceProblem


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--days", type=int, default=750)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    factors = rng.normal(0, 0.01, (args.days, 5)) @ rng.normal(0, 1, (5, args.n))
    returns = factors + rng.normal(0, 0.015, (args.days, args.n))
    sigma = np.cov(returns.T)
    mu = returns.mean(axis=0)
    MeanVarianceProblem(np.eye(3)).solve(np.zeros(3))  # import/JIT warm-up, not timed
    print(f"N = {args.n} assets, Sigma from {args.days} days")
    for solver in ("OSQP", "CLARABEL"):
        for form in ("long_only", "signed"):
            directions = ["buy" if m > 0 else "sell" for m in mu] if form == "signed" else None
            t0 = time.perf_counter()
            problem = MeanVarianceProblem(sigma, form=form, solver=solver)
            w = problem.solve(mu, directions)
            first = time.perf_counter() - t0
            times = []
            for k in range(5):
                t0 = time.perf_counter()
                problem.solve(mu * (1 + 0.1 * k), directions)
                times.append(time.perf_counter() - t0)
            print(f"{solver:9s} {form:9s} first {first * 1e3:7.1f} ms   re-solve {np.median(times) * 1e3:6.1f} ms"
                  f"   (first/re-solve {first / np.median(times):5.1f}x, nonzero weights {int((np.abs(w) > 1e-6).sum())})")


if __name__ == "__main__":
    main()
