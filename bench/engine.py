"""Engine throughput: fincon's sma-cross vs a plain backtrader SMA strategy.

Both run in this process on the same synthetic 50,000 daily bars (a
seeded geometric random walk), so the ratio is measured side by side.
Goal: fincon within 2x of plain backtrader (ratio <= 2.0).

    .venv/bin/python bench/engine.py [--bars 50000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import backtrader as bt
import numpy as np
import pandas as pd

from fincon.data.view import MarketData
from fincon.engine import BrokerSettings, run_backtest
from fincon.strategies import RunContext, make_strategy

FAST, SLOW = 10, 30


def synthetic_bars(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    close = 100 * np.exp(np.cumsum(rng.normal(0, 0.015, n)))
    open_ = close * np.exp(rng.normal(0, 0.003, n))
    high = np.maximum(open_, close) * 1.004
    low = np.minimum(open_, close) * 0.996
    dates = pd.bdate_range("1900-01-01", periods=n)
    return pd.DataFrame(
        {"open": open_, "high": high, "low": low, "close": close, "volume": np.full(n, 1e6)}, index=dates
    )


class PlainSma(bt.Strategy):
    """The classic backtrader sample: all in on a golden cross, out on a death cross."""

    def __init__(self):
        self.cross = bt.indicators.CrossOver(bt.indicators.SMA(period=FAST), bt.indicators.SMA(period=SLOW))

    def next(self):
        if self.cross[0] > 0 and not self.position:
            self.buy(size=self.broker.getvalue() * 0.999 / self.data.close[0])
        elif self.cross[0] < 0 and self.position:
            self.close()


def run_plain(bars: pd.DataFrame) -> float:
    cerebro = bt.Cerebro(stdstats=False)
    cerebro.adddata(bt.feeds.PandasData(dataname=bars, openinterest=None))
    cerebro.broker.setcash(1_000_000)
    cerebro.broker.set_coc(True)
    cerebro.addstrategy(PlainSma)
    t0 = time.perf_counter()
    cerebro.run()
    return time.perf_counter() - t0


def run_fincon(bars: pd.DataFrame) -> float:
    market = MarketData({"SYN": bars}, first_index=0)
    strategy = make_strategy("sma-cross", {"fast": FAST, "slow": SLOW})
    with tempfile.TemporaryDirectory() as tmp:
        ctx = RunContext(Path(tmp), ("SYN",))
        t0 = time.perf_counter()
        run_backtest(market, strategy, BrokerSettings(), ctx, progress=False)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bars", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    bars = synthetic_bars(args.bars)
    plain, ours = [], []
    for _ in range(args.repeat):  # interleaved so machine noise hits both alike
        plain.append(run_plain(bars))
        ours.append(run_fincon(bars))
    p, o = min(plain), min(ours)
    print(f"bars: {args.bars:,}  repeats: {args.repeat} (best of each)")
    print(f"plain backtrader SMA : {args.bars / p:10,.0f} bars/s  ({p:.2f} s)")
    print(f"fincon sma-cross     : {args.bars / o:10,.0f} bars/s  ({o:.2f} s)")
    print(f"ratio fincon/plain time: {o / p:.2f}x  (goal <= 2.00x)")


if __name__ == "__main__":
    main()
