"""Shared fixtures: bundled sample data loaded through the public API."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fincon.data.prices import load_prices
from fincon.data.sources import make_source
from fincon.data.view import MarketData
from fincon.engine import BrokerSettings, run_backtest
from fincon.strategies import RunContext

START, END = pd.Timestamp("2022-10-05"), pd.Timestamp("2023-06-09")


def market_for(tickers, warmup=0, start=START, end=END) -> MarketData:
    loaded = load_prices(make_source("sample"), tuple(tickers), start, end, warmup=warmup)
    return MarketData(loaded.frames, loaded.first_index)


def backtest(market: MarketData, strategy, tmp_path: Path | None = None, **broker):
    ctx = RunContext(tmp_path or Path("."), market.tickers, {})
    return run_backtest(market, strategy, BrokerSettings(**broker), ctx, progress=False)


@pytest.fixture(scope="session")
def raw_tsla() -> pd.DataFrame:
    return make_source("sample").load("TSLA", START, END)
