"""Peer comparison (issue 22): fincon and FINSABER-2's engine on the same
windows of the same FINSABER-layout corpus, buy-and-hold and SMA cross.

    .venv/bin/python bench/peer_finsaber.py                    # 5 tickers x 2020-2021, two 6-month windows of 2021
    .venv/bin/python bench/peer_finsaber.py --tickers 2 --detail
    .venv/bin/python bench/peer_finsaber.py --window 2021-03-01:2021-08-31 --fast 5 --slow 15

Needs the optional PyPI package ``finsaber`` (FINSABER-2's engine,
Apache-2.0; not a dependency of fincon): ``pip install finsaber``. Without
it the script says so in one line and exits 0.

A synthetic FINSABER-2 tree (``write_finsaber``: seeded random walks, no
holidays) is written to a temporary folder and imported with ``fincon data
import finsaber`` (its time is reported apart, not counted). Then, for each
window and strategy, in this process and side by side:

* FINSABER: ``FINSABERBt(config).run_iterative_tickers(strategy)`` on a
  ``FinsaberParquetDataset`` of the tree (every ticker, one call, as
  FINSABER runs them; nothing saved);
* fincon engine: ``load_prices`` from the imported dataset and
  ``run_backtest``, one ticker at a time (FINSABER gives every ticker the
  whole cash), nothing written;
* fincon backtest: the same runs through ``fincon backtest --data DIR ...
  --out RUN`` (the CLI's ``main`` in this process: the run directory with its
  plot is written); its total return is read back from ``metrics.json`` and
  must equal the engine's.

The conventions are set as equal as the two engines allow: the same cash,
zero commission and slippage, fills at the decision day's close (FINSABER
``execution_timing=same_close``, fincon ``--fill close``), the same SMA
windows, SMA orders of the whole cash (FINSABER ``trade_size=1.0``), the
same inclusive span (FINSABER's ``date_to`` is exclusive: it gets the day
after fincon's ``--end``), one year of prior data for FINSABER's gate
(``training_years=1``; windows must start a year into the corpus). Total
return is final value / cash - 1 on both sides; the equity gap compares the
curves on the corpus' trading days (FINSABER's carries weekend rows). The
conventions that cannot be set equal are printed at the end. Goal: fincon
no slower, and equal results where the conventions are equal.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STRATEGIES = ("buy-and-hold", "sma-cross")

# The conventions that differ and could not be set equal (finsaber 2.0.1;
# paths are inside its wheel, which ships the engine as the package `backtest`).
DIFFERENCES = [
    (
        "calendar-day bars",
        "FINSABER reindexes prices to every calendar day and forward-fills weekends "
        "(toolkit/operation_utils.py:257-261, 281): its strategies run on 7 bars a week, so SMA "
        "windows count calendar days over repeated Friday closes and signals can fire on a "
        "Saturday or Sunday bar; its equity series has weekend rows (reduced here). fincon: trading days.",
    ),
    (
        "SMA direction",
        "FINSABER's death cross closes the long and then sells cash x trade_size more "
        "(strategy/timing/sma_crossover.py:37-40); with set_shortcash(False) (finsaber_bt.py:230) a short "
        "ties up the cash, so the next golden cross only covers it: a ticker whose first cross is "
        "down stays short/flat, one whose first cross is up stays long/flat. fincon sma-cross: "
        "long/flat (allow_short=false, used here) or 100% short on every death cross.",
    ),
    (
        "SMA entry",
        "FINSABER trades only on a crossover event (backtrader CrossOver, sma_crossover.py:21-24); "
        "fincon takes the state fast > slow, so it can enter on the window's first day.",
    ),
    (
        "SMA warm-up",
        "FINSABER's backtrader SMAs see only the window's bars: the first decision comes slow + 1 "
        "calendar bars into the window (the 30 days it reads before date_from only feed SMA_5..30 "
        "columns its feed ignores, operation_utils.py:228-234). Prior data only gates a ticker: "
        "prior_period=756 needs 3 years before date_from or the ticker is skipped "
        "(finsaber_bt.py:138-161; training_years overrides it). fincon loads slow trading days "
        "before --start.",
    ),
    (
        "whole shares",
        "FINSABER buys int(cash / close) shares (buy_and_hold.py:16, sma_crossover.py:53-55) and "
        "keeps the rest as cash; fincon trades fractional shares, 100% invested.",
    ),
    (
        "delisting rule",
        "FINSABER drops the last 7 days of a ticker whose data ends more than 3 days before "
        "date_to (finsaber_bt.py:195-209); fincon refuses a ticker that does not cover the window. "
        "No effect on this corpus.",
    ),
    (
        "annualisation",
        "FINSABER annualises over its calendar-day equity rows with 252 (finsaber_bt.py:406-423); "
        "fincon over trading days (not compared here: total return is).",
    ),
]


# Defaults that differ and are set equal here (same wheel).
SET_EQUAL = [
    "date_to is exclusive (operation_utils.py:228, df.date < date_to): FINSABER gets fincon's --end + 1 day",
    "cash 100,000 (trade_config.py:12) vs fincon 1,000,000: both --cash",
    "commission $0.0049/share, min $0.99, max 1% (trade_config.py:14-16, finsaber_bt.py:455-472) vs fincon 0: both 0",
    "fills at the next open sized at the decision close (trade_config.py:17) vs fincon's close: both at the "
    "decision close (same_close = cheat-on-close, finsaber_bt.py:231-232)",
    "SMA orders 95% of the cash (sma_crossover.py:11, trade_size) vs fincon 100%: trade_size=1.0",
    "prior-data gate of 3 years (prior_period=756, finsaber_bt.py:138-161): training_years=1",
]


def default_windows(years: list[int]) -> list[tuple[str, str]]:
    """Two 6-month windows of the last year (the first year feeds FINSABER's prior-data gate)."""
    y = years[-1]
    return [(f"{y}-01-01", f"{y}-06-30"), (f"{y}-07-01", f"{y}-12-31")]


def import_corpus(tree: Path, out: Path) -> float:
    """``fincon data import finsaber TREE --out DIR`` as a user runs it; its wall time."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "fincon.cli.main", "data", "import", "finsaber", str(tree), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if proc.returncode != 0:
        raise SystemExit(f"bench/peer_finsaber.py: import failed: {proc.stderr.strip()}")
    return time.perf_counter() - t0


def backtest_argv(data: Path, ticker: str, strategy: str, window, args, out: Path | None = None) -> list[str]:
    argv = [
        "backtest",
        "--data",
        str(data),
        "--ticker",
        ticker,
        "--strategy",
        strategy,
        "--start",
        window[0],
        "--end",
        window[1],
        "--cash",
        str(args.cash),
        "--commission-model",
        "zero",
        "--slippage",
        "0",
        "--fill",
        "close",
        "--no-benchmark",
        "--no-progress",
        "--json",
    ]
    if strategy == "sma-cross":
        argv += ["--param", f"sma-cross.fast={args.fast}", "--param", f"sma-cross.slow={args.slow}"]
    if out is not None:
        argv += ["--out", str(out)]
    return argv


def run_fincon_engine(data: Path, ticker: str, strategy: str, window, args, tmp: Path):
    """load_prices + run_backtest for one ticker, configured through the CLI's own
    parser and builder (so the settings are those of ``fincon backtest``)."""
    from fincon.cli.backtest import build_config
    from fincon.cli.main import build_parser
    from fincon.data.prices import load_prices
    from fincon.data.view import MarketData
    from fincon.engine import run_backtest
    from fincon.strategies import RunContext, make_strategy
    from fincon.workflow.runner import broker_settings, inputs_for

    cfg = build_config(build_parser().parse_args(backtest_argv(data, ticker, strategy, window, args)))
    t0 = time.perf_counter()
    strat = make_strategy(strategy, cfg.strategy_params.get(strategy))
    source = inputs_for(cfg).source
    loaded = load_prices(source, (ticker,), pd.Timestamp(cfg.start), pd.Timestamp(cfg.end), warmup=strat.warmup)
    market = MarketData(loaded.frames, loaded.first_index)
    res = run_backtest(market, strat, broker_settings(cfg.broker), RunContext(tmp, (ticker,)), progress=False)
    wall = time.perf_counter() - t0
    return wall, float(res.values[-1] / args.cash - 1.0), pd.Series(res.values, index=res.dates)


def run_fincon_cli(data: Path, ticker: str, strategy: str, window, args, out: Path) -> tuple[float, float]:
    """``fincon backtest ... --out RUN`` in this process; total return from metrics.json."""
    from fincon.cli.main import main

    argv = backtest_argv(data, ticker, strategy, window, args, out)
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    wall = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"bench/peer_finsaber.py: fincon {' '.join(argv)} exited {code}")
    metrics = json.loads((out / "metrics.json").read_text())
    return wall, metrics["cum_simple_return_pct"] / 100.0


def run_finsaber(loader, tickers: list[str], strategy: str, window, args):
    """One FINSABERBt call over every ticker; {ticker: (total return, equity series)}."""
    from finsaber import FINSABERBt

    if strategy == "buy-and-hold":
        from backtest.strategy.timing.buy_and_hold import BuyAndHoldStrategy as cls

        kwargs = {}
    else:
        from backtest.strategy.timing.sma_crossover import SMACrossStrategy as cls

        kwargs = {"short_window": args.fast, "long_window": args.slow, "trade_size": 1.0}
    end_exclusive = (pd.Timestamp(window[1]) + pd.Timedelta(days=1)).strftime("%Y-%m-%d")
    config = {
        "tickers": list(tickers),
        "date_from": window[0],
        "date_to": end_exclusive,
        "cash": float(args.cash),
        "commission_per_share": 0.0,
        "min_commission": 0.0,
        "max_commission_rate": 0.0,
        "slippage_perc": 0.0,
        "execution_timing": "same_close",
        "training_years": 1,
        "silence": True,
        "save_results": False,
        "print_trades_table": False,
        "setup_name": "fincon-peer",
        "data_loader": loader,
    }
    t0 = time.perf_counter()
    metrics = FINSABERBt(config).run_iterative_tickers(cls, **kwargs)
    wall = time.perf_counter() - t0
    out = {}
    for t, m in metrics.items():
        eq = m["equity_with_time"]
        out[t] = (float(m["total_return"]), pd.Series(eq["equity"].to_numpy(), index=pd.DatetimeIndex(eq["datetime"])))
    return wall, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tickers", type=int, default=5, help="synthetic tickers in the corpus (default 5)")
    ap.add_argument("--years", default="2020,2021", help="corpus years, comma-separated (default 2020,2021)")
    ap.add_argument(
        "--window",
        action="append",
        metavar="START:END",
        help="inclusive window, repeatable (default: two 6-month windows of the last year)",
    )
    ap.add_argument("--cash", type=float, default=1_000_000.0)
    ap.add_argument("--fast", type=int, default=10, help="short SMA (FINSABER's default 10)")
    ap.add_argument("--slow", type=int, default=20, help="long SMA (FINSABER's default 20)")
    ap.add_argument("--news", type=int, default=50, help="news rows in the tree (not used by either strategy)")
    ap.add_argument("--detail", action="store_true", help="print every window x ticker x strategy")
    args = ap.parse_args()

    try:
        import finsaber
    except ImportError:
        print(
            "bench/peer_finsaber.py: FINSABER-2 is not installed (optional, not a fincon dependency); "
            "run `pip install finsaber` to compare"
        )
        return 0
    import backtrader

    from fincon.data.importers.synthetic import write_finsaber

    years = [int(y) for y in args.years.split(",")]
    windows = [tuple(w.split(":")) for w in args.window] if args.window else default_windows(years)

    with tempfile.TemporaryDirectory(prefix="peer-finsaber-") as tmpname:
        tmp = Path(tmpname)
        tree, data = tmp / "tree", tmp / "dataset"
        info = write_finsaber(tree, args.tickers, years, news_rows=args.news, filings=False)
        tickers = list(info["tickers"])
        import_s = import_corpus(tree, data)
        loader = finsaber.FinsaberParquetDataset(tree, modalities=("price",))

        # untimed warm-up of both (lazy imports, matplotlib's first plot)
        run_finsaber(loader, tickers[:1], "sma-cross", windows[0], args)
        run_fincon_engine(data, tickers[0], "sma-cross", windows[0], args, tmp)
        run_fincon_cli(data, tickers[0], "sma-cross", windows[0], args, tmp / "warm")

        wall = {"finsaber": 0.0, "engine": 0.0, "cli": 0.0}
        rows = []
        for wi, window in enumerate(windows):
            for strategy in STRATEGIES:
                s_wall, s_res = run_finsaber(loader, tickers, strategy, window, args)
                wall["finsaber"] += s_wall
                for t in tickers:
                    e_wall, f_ret, f_eq = run_fincon_engine(data, t, strategy, window, args, tmp)
                    c_wall, c_ret = run_fincon_cli(data, t, strategy, window, args, tmp / f"run-{wi}-{strategy}-{t}")
                    wall["engine"] += e_wall
                    wall["cli"] += c_wall
                    if t not in s_res:
                        rows.append((window, strategy, t, f_ret, c_ret, float("nan"), float("nan")))
                        continue
                    s_ret, s_eq = s_res[t]
                    s_eq = s_eq[s_eq.index.isin(f_eq.index)]  # FINSABER's weekend rows dropped
                    common = f_eq.index.intersection(s_eq.index)
                    gap = float(np.max(np.abs(f_eq[common].to_numpy() - s_eq[common].to_numpy())) / args.cash)
                    rows.append((window, strategy, t, f_ret, c_ret, s_ret, gap))

    runs = len(windows) * len(STRATEGIES) * len(tickers)
    print(
        f"corpus: {len(tickers)} synthetic tickers x {years[0]}-{years[-1]} ({info['days']} trading days, "
        f"no holidays), FINSABER-2 layout; `fincon data import finsaber` {import_s:.2f} s (not counted)"
    )
    print(
        f"windows (inclusive): {', '.join(f'{a}..{b}' for a, b in windows)}; finsaber {finsaber_version()}, "
        f"backtrader {backtrader.__version__}"
    )
    print(
        f"set equal: cash {args.cash:,.0f}; zero commission and slippage; fill at the decision close; "
        f"SMA {args.fast}/{args.slow}; SMA orders of the whole cash; FINSABER date_to = end + 1 day, "
        "training_years=1"
    )
    print()
    print(
        f"wall time, {runs} ticker-runs each ({len(windows)} windows x {len(STRATEGIES)} strategies x {len(tickers)})"
    )
    print(f"  {'engine':<50} {'total s':>8} {'per run':>8}")
    lines = [
        ("FINSABER  FINSABERBt.run_iterative_tickers", wall["finsaber"]),
        ("fincon    load_prices + run_backtest", wall["engine"]),
        ("fincon    `fincon backtest` in-process (run dir)", wall["cli"]),
    ]
    for label, s in lines:
        print(f"  {label:<50} {s:8.3f} {s / runs:8.4f}")
    print(f"  ratio fincon engine / FINSABER: {wall['engine'] / wall['finsaber']:.2f}x  (goal <= 1.00x)")
    print(f"  ratio fincon backtest (writes the run dir) / FINSABER: {wall['cli'] / wall['finsaber']:.2f}x")
    print()
    if args.detail:
        print(
            f"  {'window':<22} {'strategy':<13} {'ticker':<6} {'fincon':>9} {'FINSABER':>9} {'diff':>9} {'eq gap':>8}"
        )
        for window, strategy, t, f_ret, _, s_ret, gap in rows:
            print(
                f"  {window[0]}..{window[1]} {strategy:<13} {t:<6} {f_ret:9.4%} {s_ret:9.4%} "
                f"{f_ret - s_ret:+9.4%} {gap:8.4%}"
            )
        print()
    print("total return, fincon vs FINSABER (largest |difference| over windows x tickers)")
    print(f"  {'strategy':<13} {'max |diff|':>11} {'at':<29} {'max eq gap':>11} {'skipped':>8}")
    for strategy in STRATEGIES:
        mine = [r for r in rows if r[1] == strategy]
        done = [r for r in mine if not np.isnan(r[5])]
        if not done:
            print(f"  {strategy:<13} {'-':>11} {'FINSABER ran no ticker':<29}")
            continue
        worst = max(done, key=lambda r: abs(r[3] - r[5]))
        where = f"{worst[0][0]}..{worst[0][1]} {worst[2]}"
        print(
            f"  {strategy:<13} {abs(worst[3] - worst[5]):11.6%} {where:<29} "
            f"{max(r[6] for r in done):11.6%} {len(mine) - len(done):8d}"
        )
    cli_gap = max(abs(r[3] - r[4]) for r in rows)
    print(f"  fincon backtest metrics.json vs engine: max |diff| {cli_gap:.2e}")
    print("  (eq gap: largest |equity difference| / cash on the corpus' trading days both curves have)")
    print()
    print("defaults that differ, set equal here:")
    for text in SET_EQUAL:
        print(textwrap.fill(text, 100, initial_indent="  - ", subsequent_indent="    "))
    print("conventions that differ and could not be set equal:")
    for name, text in DIFFERENCES:
        print(textwrap.fill(f"{name}: {text}", 100, initial_indent="  - ", subsequent_indent="    "))
    return 0


def finsaber_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("finsaber")
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    os.environ["FINCON_LEDGER"] = "off"  # a bench's runs are no trials: kept out of the user's ledger
    sys.exit(main())
