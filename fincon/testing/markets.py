"""Tiny markets: the bundled sample prices, a backtest in one call, and a
market whose future is scrambled.

The window START..END (2022-10-05..2023-06-09) is the sample's; every
ticker of ``fincon/data/sample`` covers it with warm-up rows before it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fincon.config import BrokerConfig
from fincon.data.inputs import sample_inputs
from fincon.data.prices import load_prices
from fincon.data.sources import make_source
from fincon.data.view import FIELDS, MarketData
from fincon.engine import run_backtest
from fincon.strategies import RunContext
from fincon.workflow.runner import broker_settings, with_corpus

START, END = pd.Timestamp("2022-10-05"), pd.Timestamp("2023-06-09")


def market_for(tickers, warmup=0, start=START, end=END) -> MarketData:
    """The sample prices of ``tickers`` with ``warmup`` rows before ``start``."""
    loaded = load_prices(make_source("sample"), tuple(tickers), start, end, warmup=warmup)
    return MarketData(loaded.frames, loaded.first_index)


def backtest(market: MarketData, strategy, tmp_path: Path | None = None, **broker):
    """Run ``strategy`` over ``market`` (no progress bar); ``broker`` are a
    run config's ``broker`` keys (``commission={"rate": 0.001}``, ``slippage={"model": "bps", "bps": 5}``).
    The run directory defaults to the cwd. A strategy that reads news gets
    the corpus its params name (the sample's by default) as the runner gives
    it, unless ``market`` carries one already."""

    settings = broker_settings(BrokerConfig(**broker))
    ctx = RunContext(tmp_path or Path("."), market.tickers, costs=settings.costs)
    if market.events is None:
        market = with_corpus(market, strategy, sample_inputs())
    return run_backtest(market, strategy, settings, ctx, progress=False)


def perturbed(market: MarketData, cut_day: int, seed: int = 7) -> MarketData:
    """Same market, but every row after backtest day ``cut_day`` scrambled:
    prices times U(0.3, 3), volumes random. Up to ``cut_day`` nothing changes,
    so a point-in-time strategy decides the same up to there."""
    rng = np.random.default_rng(seed)
    frames = {}
    absolute_cut = market.first_index + cut_day
    for j, t in enumerate(market.tickers):
        frame = pd.DataFrame({f: market._arrays[f][:, j].copy() for f in FIELDS}, index=market.dates)
        n_after = len(frame) - absolute_cut - 1
        shock = rng.uniform(0.3, 3.0, size=(n_after, 1))
        frame.iloc[absolute_cut + 1 :, :4] = frame.iloc[absolute_cut + 1 :, :4].to_numpy() * shock
        frame.iloc[absolute_cut + 1 :, 4] = rng.integers(1, 10**9, size=n_after)
        frames[t] = frame
    return MarketData(frames, market.first_index, market.events)
