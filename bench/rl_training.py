"""How long the paper's reinforcement-learning baselines take to train on 2
cores (issue 33 item 1; goal: under 2 minutes per ticker at the paper's
settings).

Each agent (a2c, ppo, dqn on one stock; finrl-a2c on a three-stock
portfolio) is trained at its default settings (fincon.strategies.rl:
20 000 environment steps on every bar before the test window, 2018-01-02 ..
2022-10-04 on the bundled sample: the paper's DRL training span) and then
trades a one-week test window; a buy-and-hold run of the same window is timed
beside them in the same process, so what each row adds over it is the
training. A ticker's cost is the three single-stock agents together.

    python bench/rl_training.py                     # the paper's settings: a few minutes
    python bench/rl_training.py --timesteps 500     # a smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import time
from pathlib import Path

GOAL_S = 120.0


def timed(argv: list[str], out: Path) -> tuple[float, dict]:
    from fincon.cli.main import main

    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main([*argv, "--out", str(out), "--no-progress", "--no-benchmark"])
    wall = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"fincon {' '.join(argv)} failed (exit {code})")
    return wall, json.loads((out / "summary.json").read_text()).get("strategy_summary") or {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ticker", default="TSLA")
    ap.add_argument("--portfolio", default="TSLA,MSFT,PFE")
    ap.add_argument("--timesteps", type=int, help="environment steps (default: the strategies' own, 20000)")
    a = ap.parse_args()
    window = ["--start", "2022-10-05", "--end", "2022-10-12"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # warm: the first run in the process paid every import (6 s of a 1 s run), which subtracted from the
        # warm runs after it gave training times below zero (found in review); torch and the agents loaded too
        timed(["backtest", "--ticker", a.ticker, "--strategy", "buy-and-hold", *window], Path(tmp) / "warm")
        # and an agent's first model: it loads torch's optimizer machinery (torch._dynamo, 6.5 s), which was
        # charged to whichever agent ran first (a2c: 7.5 s against ppo's 0.9 s at 200 steps; found in review)
        timed(["backtest", "--ticker", a.ticker, "--strategy", "a2c", *window, "--param", "a2c.timesteps=100"],
              Path(tmp) / "warm-rl")  # fmt: skip

        base, _ = timed(["backtest", "--ticker", a.ticker, "--strategy", "buy-and-hold", *window], Path(tmp) / "bh")
        for algo, tickers in (("a2c", a.ticker), ("ppo", a.ticker), ("dqn", a.ticker), ("finrl-a2c", a.portfolio)):
            argv = ["backtest", "--tickers", tickers, "--strategy", algo, *window]
            if a.timesteps:
                argv += ["--param", f"{algo}.timesteps={a.timesteps}"]
            wall, s = timed(argv, Path(tmp) / algo)
            rows.append((algo, tickers, wall, wall - base, s.get("rl_timesteps"), s.get("rl_trained_on")))
    print(f"buy-and-hold on the same window: {base:.1f} s (the run's fixed cost, subtracted below)")
    print(f"{'agent':<10} {'tickers':<15} {'wall s':>7} {'training s':>11} {'steps':>7}  trained on")
    for algo, tickers, wall, train, steps, span in rows:
        print(f"{algo:<10} {tickers:<15} {wall:>7.1f} {train:>11.1f} {steps!s:>7}  {' .. '.join(span or [])}")
    per_ticker = sum(r[3] for r in rows[:3])
    print(
        f"per ticker (a2c + ppo + dqn): {per_ticker:.1f} s of training; goal {GOAL_S:.0f} s: "
        f"ratio {per_ticker / GOAL_S:.2f} ({'met' if per_ticker < GOAL_S else 'NOT met'})"
    )
    return 0


if __name__ == "__main__":
    os.environ["FINCON_LEDGER"] = "off"  # a bench's runs are no trials: kept out of the user's ledger
    raise SystemExit(main())
