"""Significance of a rolling table (issue 32 item 6): the statistics of the
2019..2024 rolling evaluation's shape (4 universes of 9 one-year windows,
the team and 4 baselines, about 250 trading days a window) with 10,000
bootstrap replications, timed: goal under 30 s on 2 cores.

Each block is timed apart (intervals, SPA / StepM, PBO, the rest) so a
slow one shows; the returns are synthetic with that shape (the figures do
not matter here, the work does: the same calls as a real table).

    .venv/bin/python bench/stats.py [--universes 4] [--windows 9] [--days 250] [--reps 10000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from fincon.risk import significance as sig
from fincon.workflow.rolling_stats import significance

STRATEGIES = ("fincon", "buy-and-hold", "equal-weight", "markowitz", "sma-cross")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--universes", type=int, default=4)
    ap.add_argument("--windows", type=int, default=9)
    ap.add_argument("--days", type=int, default=250)
    ap.add_argument("--reps", type=int, default=10_000)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    n = a.windows * a.days
    rets = {
        f"u{k}": {s: rng.normal(0.0003 * i, 0.012, n) for i, s in enumerate(STRATEGIES)} for k in range(a.universes)
    }
    summary = pd.DataFrame([{"universe": u, "strategy": s, "wilcoxon_p": 0.5} for u in rets for s in STRATEGIES])
    one = rets["u0"]
    t0 = time.perf_counter()
    sig.sharpe_interval(one["fincon"], one["buy-and-hold"], reps=a.reps)
    t_ci = time.perf_counter() - t0
    t0 = time.perf_counter()
    sig.spa(one["buy-and-hold"], {s: one[s] for s in STRATEGIES if s != "buy-and-hold"}, reps=a.reps)
    t_spa = time.perf_counter() - t0
    t0 = time.perf_counter()
    sig.pbo(np.column_stack([one[s] for s in STRATEGIES]))
    t_pbo = time.perf_counter() - t0
    t0 = time.perf_counter()
    table, _ = significance(rets, summary, reps=a.reps)
    total = time.perf_counter() - t0
    print(
        f"{a.universes} universes x {a.windows} windows x {a.days} days x {len(STRATEGIES)} strategies, "
        f"{a.reps:,} bootstrap replications"
    )
    print(f"  one strategy's Sharpe intervals (and against buy-and-hold): {t_ci:6.2f} s")
    print(f"  one universe's SPA x {len(STRATEGIES) - 1} and StepM:            {t_spa:6.2f} s")
    print(f"  one universe's PBO (CSCV, 16 splits):                {t_pbo:6.2f} s")
    print(f"  the whole table ({len(table)} rows):                          {total:6.2f} s   (goal: under 30 s)")


if __name__ == "__main__":
    main()
