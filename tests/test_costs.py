"""Costs and fills: each commission and slippage model and the participation
cap against a hand-computed case on the bundled TSLA bars."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from fincon.cli.main import main
from fincon.engine.broker import per_share_commission

SAMPLE = Path(__file__).resolve().parents[1] / "fincon" / "data" / "sample" / "prices" / "TSLA.csv.gz"
RUN = [
    "backtest",
    "--tickers",
    "TSLA",
    "--strategy",
    "buy-and-hold",
    "--no-benchmark",
    "--start",
    "2022-10-05",
    "--end",
    "2022-10-12",
]


def _bars() -> pd.DataFrame:
    df = pd.read_csv(io.StringIO(gzip.decompress(SAMPLE.read_bytes()).decode()), parse_dates=["Date"])
    return df.set_index("Date")


def _run(tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "run"
    assert main([*RUN, *extra, "--out", str(out)]) == 0
    return out


def test_per_share_commission_by_hand():
    assert per_share_commission(100, 50.0, 0.005, 1.0, 0.01) == pytest.approx(1.0)  # 0.50 -> the $1 minimum
    assert per_share_commission(10_000, 50.0, 0.005, 1.0, 0.01) == pytest.approx(50.0)  # 10,000 x 0.005
    assert per_share_commission(1_000, 0.05, 0.005, 1.0, 0.01) == pytest.approx(0.5)  # capped: 1 % of $50
    assert per_share_commission(-300, 10.0, 0.005, 1.0, 0.0) == pytest.approx(1.5)  # a sell; no maximum
    assert per_share_commission(0, 10.0, 0.005, 1.0, 0.01) == 0.0


def test_per_share_run_charges_it_and_stays_invested(tmp_path):
    out = _run(tmp_path, "--commission-model", "per-share")
    t = pd.read_csv(out / "trades.csv")
    assert len(t) == 1
    size, price = t["size"][0], t["price"][0]
    assert price == pytest.approx(_bars().loc["2022-10-05", "Close"])
    assert t["commission"][0] == pytest.approx(size * 0.005)  # 4,152 shares: above the minimum, below 1 %
    assert size * price + size * 0.005 == pytest.approx(1_000_000.0, rel=1e-8)  # all cash, net of the fee
    m = json.loads((out / "metrics.json").read_text())
    assert m["costs"]["commission_model"] == "per-share"
    assert m["costs"]["commission_paid"] == pytest.approx(size * 0.005, rel=1e-6)
    cfg = (out / "config.yaml").read_text()
    assert "commission_model: per-share" in cfg


def test_zero_commission_ignores_the_rate(tmp_path):
    out = _run(tmp_path, "--commission-model", "zero", "--commission", "0.01")
    assert pd.read_csv(out / "trades.csv")["commission"].sum() == 0.0


def test_bps_slippage(tmp_path):
    out = _run(tmp_path, "--slippage-model", "bps", "--slippage", "10")
    t = pd.read_csv(out / "trades.csv")
    assert t["price"][0] == pytest.approx(_bars().loc["2022-10-05", "Close"] * 1.001)


def test_range_slippage_is_a_share_of_the_decision_days_range(tmp_path):
    out = _run(tmp_path, "--slippage-model", "range", "--slippage", "0.5")
    b = _bars().loc["2022-10-05"]  # Adj Close == Close on these days, so no adjustment factor
    t = pd.read_csv(out / "trades.csv")
    assert t["price"][0] == pytest.approx(b["Close"] + 0.5 * (b["High"] - b["Low"]))  # 240.81 + 0.5 x 13.40


@pytest.mark.parametrize("rest", ["cancel", "carry"])
def test_participation_cap_binds(tmp_path, rest):
    out = _run(tmp_path, "--participation", "0.025", "--participation-rest", rest, "--cash", "1e10")
    bars = _bars()
    orders = pd.read_csv(out / "orders.csv")
    first = orders.iloc[0]
    assert first["status"] == "partial"
    assert first["filled"] == pytest.approx(0.025 * bars.loc["2022-10-05", "Volume"])  # 2,174,567.5 shares
    assert "participation cap 2.50%" in first["reason"]
    trades = pd.read_csv(out / "trades.csv")
    assert trades["size"].sum() == pytest.approx(orders["filled"].sum())
    m = json.loads((out / "metrics.json").read_text())["costs"]
    assert m["participation"] == 0.025 and m["orders_partial"] == (orders["status"] == "partial").sum()
    if rest == "cancel":
        assert len(orders) == 1 and first["reason"].endswith("cancelled")
    else:  # each later day carries the rest, capped at that day's volume
        days = ["2022-10-06", "2022-10-07", "2022-10-10", "2022-10-11"]
        assert list(orders["date"][1:]) == days
        for d, (_, row) in zip(days, orders.iloc[1:].iterrows()):
            assert row["reason"].startswith("rest carried from")
            assert row["filled"] == pytest.approx(0.025 * bars.loc[d, "Volume"])
            assert row["requested"] == pytest.approx(first["requested"] - orders["filled"][orders["date"] < d].sum())


class _Spender:
    """A strategy whose model calls cost $100 a day; buys TSLA on its first day if asked."""

    name = "spender"
    warmup = 0

    def __init__(self, buy: bool):
        self.buy, self.days = buy, 0

    def start(self, ctx):
        pass

    def decide(self, view):
        from fincon.strategies.base import Decision

        self.days += 1
        return Decision(weights={"TSLA": 1.0}) if self.buy and self.days == 1 else None

    def spent_usd(self) -> float:
        return 100.0 * self.days

    def progress(self):
        return {}

    def finish(self, ctx):
        return {}


@pytest.mark.parametrize("buy", [False, True])
def test_llm_spend_is_charged_to_the_account(tmp_path, buy):
    import numpy as np

    from fincon.data.view import MarketData
    from fincon.engine.backtest import run_backtest
    from fincon.engine.broker import BrokerSettings
    from fincon.strategies.base import RunContext

    dates = pd.bdate_range("2023-01-02", periods=6)
    close = np.array([100.0, 101.0, 99.0, 102.0, 103.0, 104.0])
    frame = pd.DataFrame({"open": close, "high": close, "low": close, "close": close, "volume": 1e6}, index=dates)
    market = MarketData({"TSLA": frame}, first_index=0)
    res = run_backtest(
        market,
        _Spender(buy),
        BrokerSettings(cash=10_000.0, charge_llm=True),
        RunContext(tmp_path, ("TSLA",), {}),
        progress=False,
    )
    # $100 at each decision close (no decision on the last day), taken from the cash from the next day on
    assert res.llm_cost.tolist() == [100.0] * 5 + [0.0]
    assert res.rejected_orders == 0
    if not buy:
        assert res.values.tolist() == pytest.approx([10_000.0 - 100.0 * i for i in range(6)])
    else:  # all in on day one, sized on the cash left after that day's charge: 9,900 / 100 = 99 shares
        shares = 9_900.0 / 100.0
        assert res.values[-1] == pytest.approx(shares * 104.0 - 400.0, abs=1e-4)
