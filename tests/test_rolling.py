"""Rolling evaluation: windows, universe rules (point in time), the tables
across windows, and one small end-to-end run on the bundled data."""

from __future__ import annotations

import datetime as dt
import io
import json

import numpy as np
import pandas as pd
import pytest

from fincon.cli.main import main
from fincon.workflow.experiment import load_experiment
from fincon.workflow.rolling import windows
from fincon.workflow.rolling_results import summarize
from fincon.workflow.universe import eligible, parse_rule, select


def _bars(closes: list[float], volume: float, start: str = "2020-01-01") -> pd.DataFrame:
    idx = pd.bdate_range(start, periods=len(closes))
    c = np.asarray(closes, dtype=float)
    return pd.DataFrame({"open": c, "high": c, "low": c, "close": c, "volume": volume}, index=idx)


def test_windows_of_the_bundled_span():
    exp = load_experiment(
        None,
        {
            "team.brain": "rules",
            "rolling.window": "1y",
            "rolling.step": "6m",
            "rolling.start": "2019-01-01",
            "rolling.end": "2024-12-31",
        },
    )
    ws = windows(exp, dt.date(2024, 3, 8))
    # 2019-01, 2019-07, ..., 2023-01: nine full years end by the data's last day
    assert [w.test.start.isoformat() for w in ws] == [f"{y}-{m:02d}-01" for y in range(2019, 2024) for m in (1, 7)][:9]
    assert (ws[0].train.start, ws[0].train.end) == (dt.date(2018, 1, 1), dt.date(2018, 12, 31))
    assert (ws[-1].test.start, ws[-1].test.end) == (dt.date(2023, 1, 1), dt.date(2023, 12, 31))


def test_rules_parse_and_refuse():
    assert parse_rule("random:5:3").slug == "random-5-s3"
    assert parse_rule("momentum:5").n == 5
    assert parse_rule("aapl, msft").tickers == ("AAPL", "MSFT")
    for bad in ("random:5", "best:5", "momentum:0", "top-volume:x"):
        with pytest.raises(ValueError):
            parse_rule(bad)


def test_each_universe_has_its_own_directory_and_is_given_once():
    """Found in review: two 13-ticker lists sharing their first 60 characters wrote into one directory
    (the second's baselines over the first's), and MSFT beside msft (random:1:5 beside random:1:05) was
    one universe counted twice in the pooled Wilcoxon test (p 0.5 where it is 1.0)."""
    from fincon.errors import ConfigError
    from fincon.workflow.experiment import load_experiment

    common = "AAPL,AMZN,GOOG,META,MSFT,NVDA,TSLA,ORCL,INTC,AMD,CSCO,ADBE,NFLX"
    assert parse_rule(f"{common},NVDA").slug != parse_rule(f"{common},IBM").slug
    assert parse_rule("AAPL,MSFT").slug == "list-AAPL-MSFT"  # a short list: its name as before
    for twice in (["MSFT", "msft"], ["random:1:5", "random:1:05"], ["AAPL,MSFT", "MSFT, AAPL"]):
        spec = {"rolling": {"start": "2022-01-03", "end": "2022-12-30", "universes": twice}}
        with pytest.raises(ConfigError, match="again; give each universe once"):
            load_experiment(None, spec)


def test_the_pool_names_the_firms_whose_bars_end_early():
    from fincon.workflow.rolling import pool_of

    full, short = _bars([100.0] * 300, 1e6), _bars([100.0] * 290, 1e6)  # 10 bars (two weeks) fewer
    days_short = _bars([100.0] * 296, 1e6)  # 4 bars fewer: within a week of the last day (a holiday, a halt)
    pool = pool_of({"A": full, "B": short, "C": days_short})
    assert pool == {"candidates": 3, "last_day": str(full.index[-1].date()), "ended": ["B"]}
    assert pool_of({"A": full, "C": days_short})["ended"] == []


def test_a_firm_that_left_before_any_window_is_no_firm_that_left_the_pool(monkeypatch):
    """Found in review: a firm whose bars end three years before the first window (never in any window's
    choice set) was the pool's one firm that left, and the card passed "firms that left are in the pool"
    for picks all made among survivors. It counts only where a window could pick it."""
    from fincon.workflow import rolling

    full = _bars([100.0] * 800, 1e6, start="2019-01-01")
    early = full.loc[: pd.Timestamp("2019-05-31")]  # gone before the first window's pick (2020-01-01)
    later = full.loc[: pd.Timestamp("2020-09-30")]  # gone after a pick it could have been in
    exp = load_experiment(None, {"team.brain": "rules", "rolling.window": "6m", "rolling.step": "6m",
                                 "rolling.start": "2020-01-01", "rolling.end": "2020-06-30",
                                 "rolling.universes": ["top-volume:1"]})  # fmt: skip
    monkeypatch.setattr(rolling, "_bars", lambda exp: {"AAA": full, "EARLY": early})
    assert rolling.plan(exp)[1]["ended"] == []
    monkeypatch.setattr(rolling, "_bars", lambda exp: {"AAA": full, "EARLY": early, "LATER": later})
    assert rolling.plan(exp)[1]["ended"] == ["LATER"]


def test_a_pick_that_leaves_inside_its_window_is_refused_in_words_that_say_why(monkeypatch):
    """Found in review: a rule picks point in time, among firms that will leave too, and a firm picked
    whose bars end inside the window stopped the whole evaluation with "DEAD: 2021-01-01..2021-12-31 is
    outside the data ...; pick dates inside it": advice about dates the user never gave. fincon holds no
    firm to its exit (no delisting return), and dropping it would pick among survivors: said so, with
    the last span an evaluation can cover."""
    from fincon.errors import ConfigError
    from fincon.workflow import rolling

    full = _bars([100.0] * 800, 1e6, start="2019-01-01")
    dead = full.loc[: pd.Timestamp("2021-06-30")].assign(volume=5e6)
    monkeypatch.setattr(rolling, "_bars", lambda exp: {"AAA": full, "DEAD": dead})
    exp = load_experiment(None, {"team.brain": "rules", "rolling.window": "1y", "rolling.step": "1y",
                                 "rolling.start": "2020-01-01", "rolling.end": "2021-12-31",
                                 "rolling.universes": ["top-volume:1"]})  # fmt: skip
    with pytest.raises(ConfigError) as exc:
        rolling.plan(exp)
    assert str(exc.value) == (
        "rolling window 2021-01-01..2021-12-31 (top-volume:1): the rule picked DEAD at the window's start, "
        "and its bars end on 2021-06-30, inside the window: fincon does not hold a firm to its exit (no delisting "
        "return), and leaving it out would pick among survivors; an evaluation whose picks outlive their windows "
        "ends by 2020-12-31 here (--rolling-end)"
    )


def test_rules_read_only_bars_before_the_window():
    n = 300
    up = [100 * 1.001**i for i in range(n)]  # +34.9 % over the last 300 days
    flat = [100.0] * n
    down = [100 * 0.999**i for i in range(n)]
    bars = {"UP": _bars(up, 1e6), "FLAT": _bars(flat, 5e6), "DOWN": _bars(down, 2e6)}
    start = (bars["UP"].index[-1] + pd.Timedelta(days=1)).date()
    hist = bars["UP"].index[0].date()
    assert select(parse_rule("momentum:1"), bars, hist, start) == ["UP"]
    assert select(parse_rule("momentum:2"), bars, hist, start) == ["FLAT", "UP"]
    # mean dollar volume of the last 60 days: FLAT 5e8, DOWN ~1.5e8, UP ~1.3e8
    assert select(parse_rule("top-volume:1"), bars, hist, start) == ["FLAT"]
    assert select(parse_rule("top-volume:2"), bars, hist, start) == ["DOWN", "FLAT"]
    # a bar on or after the window's first day changes nothing (point in time)
    later = pd.DataFrame(
        {"open": 1e4, "high": 1e4, "low": 1e4, "close": 1e4, "volume": 1e12}, index=[pd.Timestamp(start)]
    )
    bars2 = {**bars, "DOWN": pd.concat([bars["DOWN"], later])}
    assert select(parse_rule("momentum:1"), bars2, hist, start) == ["UP"]
    assert select(parse_rule("top-volume:1"), bars2, hist, start) == ["FLAT"]
    # random: reproducible, and drawn anew per window
    r = parse_rule("random:2:7")
    assert select(r, bars, hist, start) == select(r, bars, hist, start)
    # a ticker whose bars begin after the training window's start is not eligible
    late = {**bars, "NEW": _bars(up[:100], 1e9, start="2021-01-01")}
    assert "NEW" not in eligible(late, hist, start)
    with pytest.raises(ValueError, match="NEW"):
        select(parse_rule("NEW,UP"), late, hist, start)


def test_momentum_reads_twelve_months_of_each_tickers_own_sessions():
    """momentum:N ranks by the return over 12 months, read as 252 bars: a coin's 252 bars are 8
    months, so beside a stock it was ranked on another span. Here the coin fell from 200 to 100 over
    the 12 months' first third and rose to 150 since (12 months: -25 %; its last 252 bars: +50 %), the
    stock rose 5 %: the stock leads over 12 months of each one's sessions."""
    start = pd.Timestamp("2021-06-01")
    days = pd.date_range(start - pd.Timedelta(days=400), start - pd.Timedelta(days=1), freq="D")
    ago = (start - days).days.to_numpy()  # days before the window
    coin = np.where(
        ago > 365, 200.0, np.where(ago > 253, 200.0 - 100.0 * (365 - ago) / 112, 100.0 + 50.0 * (253 - ago) / 252)
    )
    weekdays = days[days.day_of_week < 5]
    stock = np.linspace(100.0, 105.0, len(weekdays))
    frame = lambda idx, c: pd.DataFrame({"open": c, "high": c, "low": c, "close": c, "volume": 1e6}, index=idx)  # noqa: E731
    bars = {"COIN": frame(days, coin), "STOCK": frame(weekdays, stock)}
    assert coin[-1] / coin[-366] - 1 == pytest.approx(-0.25) and coin[-1] / coin[-253] - 1 == pytest.approx(0.5)
    assert select(parse_rule("momentum:1"), bars, days[0].date(), start.date()) == ["STOCK"]


def test_top_volume_reads_three_months_of_each_tickers_own_sessions():
    """top-volume:N averaged the dollar volume of the last 60 bars: 3 months of a stock's sessions,
    2 of a coin's. A coin that traded $7e8 a day until 60 days before the window and $0.5e8 since,
    beside a stock at $2e8 throughout: over the coin's own 3 months (86 bars) it averages
    (26 x 7e8 + 60 x 0.5e8) / 86 = $2.47e8 and leads; over 60 bars ($0.5e8) it trailed."""
    start = pd.Timestamp("2021-06-01")
    days = pd.date_range(start - pd.Timedelta(days=200), start - pd.Timedelta(days=1), freq="D")
    ago = (start - days).days.to_numpy()
    weekdays = days[days.day_of_week < 5]

    def frame(idx, volume):  # a close of 100: the dollar volume is 100 x volume
        return pd.DataFrame({"open": 100.0, "high": 100.0, "low": 100.0, "close": 100.0, "volume": volume}, index=idx)

    bars = {"COIN": frame(days, np.where(ago > 60, 7e6, 0.5e6)), "STOCK": frame(weekdays, 2e6)}
    assert select(parse_rule("top-volume:1"), bars, days[0].date(), start.date()) == ["COIN"]


def test_top_volume_ranks_on_no_dividend_paid_after_the_window_starts():
    """Found in review: a bar's close is the vendor's adjusted close (each close before a dividend
    scaled down by it, however much later it is paid) and its volume was the raw one, so top-volume's
    close x volume ranked on dividends paid after the window's start (here BBB, 5 % more traded, lost
    to AAA over a 10 % payout five months into the window), and the participation cap read the same
    raw shares against adjusted prices. The volume is adjusted as the price is (shares x price, the
    dollars traded, is the day's own), so the ranking reads the past alone."""
    from fincon.data.prices import validate_bars

    days = pd.bdate_range("2020-01-01", "2021-12-31")
    start = dt.date(2021, 1, 4)

    def raw(volume, payout=0.0):
        close = np.full(len(days), 100.0)
        adj = np.where(days < pd.Timestamp("2021-06-01"), 100.0 * (1 - payout), 100.0)
        return pd.DataFrame({"Date": days.strftime("%Y-%m-%d"), "Open": close, "High": close, "Low": close,
                             "Close": close, "Adj Close": adj, "Volume": volume})  # fmt: skip

    for payout in (0.0, 0.10):
        bars = {"AAA": validate_bars(raw(1e6), "AAA", "x"), "BBB": validate_bars(raw(1.05e6, payout), "BBB", "x")}
        assert select(parse_rule("top-volume:1"), bars, days[0].date(), start) == ["BBB"], payout
        before = bars["BBB"].loc[: pd.Timestamp("2021-05-28")]
        assert (before["close"] * before["volume"]).to_numpy() == pytest.approx(100.0 * 1.05e6)  # the day's dollars


def test_summary_against_buy_and_hold_by_hand():
    from scipy.stats import wilcoxon

    rows = []
    team = [5.0, -2.0, 3.0, 1.0, -4.0, 6.0]
    bh = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    for k, (a, b) in enumerate(zip(team, bh)):
        for name, cr in (("fincon", a), ("buy-and-hold", b)):
            rows.append(
                {
                    "universe": "u",
                    "window": f"k{k}",
                    "strategy": name,
                    "model_knowledge": "no-model" if name == "buy-and-hold" or k == 0 else "in-training-data",
                    "cr_pct": cr,
                    "sharpe": cr / 10,
                    "mdd_pct": 1.0,
                    "turnover": 2.0,
                    "llm_calls": 0,
                    "llm_cost_usd": 0.0,
                }
            )
    s = summarize(pd.DataFrame(rows)).set_index("strategy")
    assert s.loc["fincon", "share_beats_bh"] == pytest.approx(3 / 6)  # 5, 3 and 6 beat 1; 1 == 1 does not
    assert s.loc["fincon", "median_cr_pct"] == pytest.approx(2.0)  # median of -4,-2,1,3,5,6
    assert s.loc["fincon", "mean_excess_cr_pct"] == pytest.approx(np.mean(team) - 1.0)
    assert s.loc["fincon", "wilcoxon_p"] == pytest.approx(wilcoxon(np.subtract(team, bh)).pvalue)
    assert s.loc["buy-and-hold", "wilcoxon_p"] is None or np.isnan(s.loc["buy-and-hold", "wilcoxon_p"])
    assert s.loc["fincon", "model_knowledge"] == "in-training-data 5/6, no-model 1/6"  # each window's label, counted
    # a window sat out (no return, no volatility) has no Sharpe ratio: it counts as 0, not as absent
    # (the median of the 3 windows that traded was shown beside "windows 8")
    flat = pd.DataFrame(rows)
    flat.loc[flat.strategy == "fincon", ["cr_pct", "sharpe"]] = [[0.0, np.nan]] * 4 + [[3.0, 0.3], [-4.0, -0.4]]
    s = summarize(flat).set_index("strategy")
    assert s.loc["fincon", "median_sharpe"] == pytest.approx(0.0)  # median of 0, 0, 0, 0, 0.3, -0.4


def test_a_rolling_evaluation_with_costs_says_what_they_took(tmp_path):
    """An experiment's table and a journal's score say what fees, slippage and the borrow fee took; a
    rolling evaluation's summary did not. Each window's row reads its run's costs block when a cost is
    set, the summary sums them over the windows, and the table shows the column only then."""
    from types import SimpleNamespace

    from fincon.cli.main import main
    from fincon.config import BrokerConfig
    from fincon.workflow.rolling_results import window_rows
    from fincon.workflow.tables import rolling_summary

    week = ["backtest", "--ticker", "TSLA", "--start", "2022-10-05", "--end", "2022-10-12", "--no-progress",
            "--strategy", "buy-and-hold", "--no-benchmark"]  # fmt: skip
    dear = ["--commission", "0.001", "--slippage-model", "bps", "--slippage", "5"]
    assert main([*week, *dear, "--out", str(tmp_path / "dear")]) == 0
    costs = json.loads((tmp_path / "dear" / "metrics.json").read_text())["costs"]
    took = costs["commission_paid"] + costs["slippage_paid"]
    assert round(took, 2) == 1498.25  # all the cash: 0.1 % of it in commission, 5 bp of the rest slipped

    class Window:  # a window whose every strategy is the costed run (rolling_results.unit_dirs' answer)
        def __init__(self, name: str, broker: BrokerConfig):
            self.universe, self.tickers = "TSLA", ["TSLA"]
            self.window = SimpleNamespace(
                name=name, test=SimpleNamespace(start=dt.date(2022, 10, 5), end=dt.date(2022, 10, 12))
            )
            self.exp = SimpleNamespace(broker=broker)

    from unittest import mock

    with mock.patch(
        "fincon.workflow.rolling_results.unit_dirs",
        lambda c, out: {"fincon": tmp_path / "dear", "buy-and-hold": tmp_path / "dear"},
    ):
        costly = BrokerConfig.model_validate(
            {"commission": {"model": "percent", "rate": 0.001}, "slippage": {"model": "bps", "bps": 5}}
        )
        df = window_rows(tmp_path, [Window("k0", costly), Window("k1", costly)])
        free = window_rows(tmp_path, [Window("k0", BrokerConfig())])
    assert list(df.columns).index("costs_paid") == list(df.columns).index("turnover") + 1
    assert df["costs_paid"].tolist() == pytest.approx([took] * 4)
    assert "costs_paid" not in free.columns  # without a cost: the windows.csv it wrote
    s = summarize(df).set_index("strategy")
    assert s.loc["fincon", "costs_paid"] == pytest.approx(2 * took)  # over both windows
    heads, cells, _ = rolling_summary(summarize(df).to_dict("records"))
    assert "trading costs $ (all windows)" in heads
    assert cells[0][heads.index("trading costs $ (all windows)")] == f"{2 * took:,.2f}" == "2,996.50"
    assert "trading costs $ (all windows)" not in rolling_summary(summarize(free).to_dict("records"))[0]


def test_windows_where_a_strategy_traded_as_buy_and_hold_are_counted(tmp_path):
    """With 200 training timesteps ppo and a2c traded as buy-and-hold on TSLA (the paper's comparison),
    and an sma-cross long a whole window does too: such a window's excess CR is 0, counted as not beating
    buy-and-hold, and the Wilcoxon test drops the pair, unsaid; two strategies that traded identically are
    one result in two rows. windows.csv's traded_as names each one's twins and a FLAG counts the windows;
    an evaluation where no two did writes the columns it did."""
    from types import SimpleNamespace
    from unittest import mock

    from fincon.cli.main import main
    from fincon.config import BrokerConfig
    from fincon.workflow.rolling_results import window_rows
    from fincon.workflow.tables import rolling_flags

    week = ["backtest", "--ticker", "TSLA", "--start", "2022-10-05", "--end", "2022-10-12", "--no-progress",
            "--no-benchmark"]  # fmt: skip
    assert main([*week, "--strategy", "buy-and-hold", "--out", str(tmp_path / "bh")]) == 0
    assert main([*week, "--strategy", "sma-cross", "--out", str(tmp_path / "flat")]) == 0  # no fill in a week
    bh, flat = tmp_path / "bh", tmp_path / "flat"

    def window(name: str, dirs: dict):
        test = SimpleNamespace(start=dt.date(2022, 10, 5), end=dt.date(2022, 10, 12))
        return SimpleNamespace(universe="TSLA", tickers=["TSLA"], window=SimpleNamespace(name=name, test=test),
                               exp=SimpleNamespace(broker=BrokerConfig()), dirs=dirs)  # fmt: skip

    with mock.patch("fincon.workflow.rolling_results.unit_dirs", lambda c, out: c.dirs):
        df = window_rows(tmp_path, [window("k0", {"fincon": flat, "sma-cross": bh, "buy-and-hold": bh}),
                                    window("k1", {"fincon": flat, "sma-cross": flat, "buy-and-hold": bh})])  # fmt: skip
        apart = window_rows(tmp_path, [window("k0", {"fincon": flat, "buy-and-hold": bh})])
    rows = df.set_index(["window", "strategy"])["traded_as"]
    assert rows[("k0", "sma-cross")] == "buy-and-hold" and rows[("k0", "buy-and-hold")] == "sma-cross"
    assert rows[("k0", "fincon")] == "" and rows[("k1", "fincon")] == "sma-cross"  # both flat in k1
    assert "traded_as" not in apart.columns
    flags = rolling_flags(summarize(df).to_dict("records"), json.loads(df.to_json(orient="records")))
    assert (
        "sma-cross (TSLA) traded as buy-and-hold in 1 of 2 windows: their excess CR is 0, counted as not beating "
        "it, and the Wilcoxon test drops those pairs" in flags
    )
    assert "fincon and sma-cross (TSLA) traded identically in 1 of 2 windows: one result in two rows there" in flags
    assert len(flags) == 3  # and the two windows' Wilcoxon flag; each pair said once
    # read back from windows.csv (an empty cell is NaN there): the same flags
    df.to_csv(tmp_path / "windows.csv", index=False)
    again = pd.read_csv(tmp_path / "windows.csv").to_dict("records")
    assert rolling_flags(summarize(df).to_dict("records"), again) == flags


def test_too_few_windows_for_the_wilcoxon_test_are_flagged():
    """Found by hand (InvestorBench MSFT, 5 two-month windows): "p vs B&H 0.0625" where the team lost in
    every window, the smallest p a two-sided Wilcoxon test of 5 pairs can give (scipy's exact test, as
    the summary computes it): no result of 5 windows could reach 0.05, and the table did not say so."""
    from scipy.stats import wilcoxon

    from fincon.workflow.tables import rolling_flags

    assert wilcoxon([-1.0, -2.0, -3.0, -4.0, -5.0]).pvalue == pytest.approx(2 / 2**5)
    assert wilcoxon([-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]).pvalue < 0.05
    five = [{"windows": 5, "wilcoxon_p": 0.0625}, {"windows": 5, "wilcoxon_p": None}]
    assert rolling_flags(five) == [
        "5 windows: a two-sided Wilcoxon test of 5 pairs cannot give a p under 0.0625, whatever the windows show "
        "(6 windows at the least to reach 0.05)"
    ]
    assert rolling_flags([{"windows": 6, "wilcoxon_p": 0.03}]) == [] and rolling_flags([five[1]]) == []


def test_overlapping_windows_count_each_day_once():
    """The default rolling evaluation (1y windows stepped by 6m) laid its windows' daily returns end to
    end, every day of an overlap twice: on InvestorBench's MSFT (2m stepped by 1m) the significance
    table read 243 days over 145 trading days, every interval, PSR and MinTRL as if twice as long. Each
    day now counts once, the mean of the windows trading it (a book split evenly among them); windows
    that do not overlap are laid end to end as before; and the per-window Wilcoxon test, whose pairs share
    days, is flagged."""
    from fincon.workflow.rolling_stats import overlay
    from fincon.workflow.tables import rolling_flags

    days = pd.bdate_range("2021-01-04", periods=6)
    a = pd.Series([0.01, 0.02, -0.01, 0.03], index=days[:4])
    b = pd.Series([0.05, -0.03, 0.00, 0.02], index=days[2:])
    both = overlay([a, b])
    assert list(both.index) == list(days)  # six days, not eight
    assert both.tolist() == pytest.approx([0.01, 0.02, 0.02, 0.0, 0.0, 0.02])  # (-0.01+0.05)/2, (0.03-0.03)/2
    c = pd.Series([0.04, -0.02], index=days[4:])
    assert overlay([a, c]).tolist() == [0.01, 0.02, -0.01, 0.03, 0.04, -0.02]  # disjoint: end to end, as they were
    row = [{"windows": 6, "wilcoxon_p": 0.09}]
    windows = [{"universe": "MSFT", "test_start": f"2020-{m:02d}-01", "test_end": f"2020-{m + 1:02d}-28"} for m in
               range(1, 7)]  # fmt: skip
    (flag,) = rolling_flags(row, windows)
    assert flag.startswith("the test windows overlap (a day in up to 2 of them): the Wilcoxon p pairs windows")
    apart = [{**w, "test_end": w["test_start"][:8] + "20"} for w in windows]
    assert rolling_flags(row, apart) == []
    other = [{**w, "universe": "AAPL"} for w in apart[:1]]  # another universe's window on the same days
    assert rolling_flags(row, [*apart, *other]) == []


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_small_rolling_run_matches_its_windows(tmp_path, capsys):
    out = tmp_path / "roll"
    argv = [
        "experiment",
        "--bootstrap-reps",
        "1000",
        "--ledger",  # its own: the DSR's count below is this evaluation's alone
        str(tmp_path / "trials.sqlite"),
        "--brain",
        "rules",
        "--rolling",
        "2w",
        "--step",
        "2w",
        "--rolling-start",
        "2022-10-03",
        "--rolling-end",
        "2022-10-30",
        "--universe",
        "TSLA",
        "--repeats",
        "1",
        "--episodes",
        "1",
        "--ablations",
        "full",
        "--baselines",
        "buy-and-hold,sma-cross",
        "--placebo",
        "shuffle-news",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(argv) == 0
    placebo_lines = capsys.readouterr().out
    assert "CI: stationary block bootstrap, 1,000 replications;" in placebo_lines  # it said 10,000 whatever was run
    assert "\nFLAG: 2 windows: a two-sided Wilcoxon test of 2 pairs cannot give a p under 0.5000" in placebo_lines
    listing = json.loads((out / "windows.json").read_text())
    assert [(w["test"]["start"], w["test"]["end"]) for w in listing] == [
        ("2022-10-03", "2022-10-16"),
        ("2022-10-17", "2022-10-30"),
    ]
    df = pd.read_csv(out / "windows.csv")
    for w in listing:
        bh_run = out / w["dir"] / "baselines" / "buy-and-hold"
        cr = json.loads((bh_run / "metrics.json").read_text())["cr_pct"]
        rows = df[df.window == w["window"]].set_index("strategy")
        assert rows.loc["buy-and-hold", "cr_pct"] == pytest.approx(cr, rel=1e-5)
        assert rows.loc["fincon", "excess_cr_pct"] == pytest.approx(
            rows.loc["fincon", "cr_pct"] - rows.loc["buy-and-hold", "cr_pct"], abs=1e-4
        )
    first = (out / "summary.csv").read_bytes()
    # issue 32: the statistics of each strategy over the windows' daily returns, in summary.csv
    summ = pd.read_csv(out / "summary.csv").set_index("strategy")
    days = len(df[df.strategy == "fincon"]) and int(summ.loc["fincon", "days"])
    assert days == sum(
        len(pd.read_csv(out / w["dir"] / "baselines" / "buy-and-hold" / "equity.csv")) - 1 for w in listing
    )
    for col in ("sharpe_ci_lo", "psr", "dsr", "spa_p_vs_bh", "pbo", "wilcoxon_p_holm"):
        assert col in summ.columns
    assert (
        summ.loc["fincon", "sharpe_ci_lo"] <= summ.loc["fincon", "sharpe_daily"] <= summ.loc["fincon", "sharpe_ci_hi"]
    )
    # fincon, sma-cross and buy-and-hold, three distinct series: the team's placebo run is a control in the
    # ledger, never a trial (issue 42 item 1)
    assert summ.loc["fincon", "dsr_trials"] == 3
    assert summ.loc["fincon", "dsr"] <= summ.loc["fincon", "psr"]  # deflating never raises it
    res = json.loads((out / "results.json").read_text())
    assert res["significance"]["TSLA"]["best_non_llm_baseline"] in ("sma-cross", "buy-and-hold")
    # the pool the universes pick from: the bundled sample's 42 firms, every one trading to its last day
    assert res["pool"] == {"candidates": 42, "last_day": "2024-03-08", "ended": []}
    # issue 32 item 3 in a rolling evaluation: each window's own placebo corpus and block, the medians over windows
    per = []
    for w in listing:
        root = out / w["dir"]
        assert (root / "placebo" / "shuffle-news" / "TSLA.jsonl.gz").is_file()
        p = json.loads((root / "results.json").read_text())["placebo"]["shuffle-news"]
        real, fake = ({json.loads(x)["date"]: json.loads(x).get("actions") for x in
                       (root / "test" / d / "decisions.jsonl").read_text().splitlines()}
                      for d in ("full-r1", "placebo-shuffle-news-r1"))  # fmt: skip
        assert p["prediction_consistency"] == pytest.approx(sum(real[d] == fake[d] for d in real) / len(real))
        per.append(p)
    pooled = res["placebo"]["shuffle-news"]
    assert pooled["windows"] == 2 and pooled["universes"]["TSLA"]["windows"] == 2
    for key in ("cr_pct_median", "real_cr_pct", "profit_gap_pct", "prediction_consistency"):
        assert pooled[key] == pytest.approx(float(np.median([p[key] for p in per])))
    assert "placebo runs of the full team, medians over windows" in placebo_lines and "all windows" in placebo_lines
    from fincon.report.card import run_card

    rows = {r["point"]: r for r in run_card(out)["rows"]}
    row = rows["counterfactual robustness"]
    assert row["verdict"] != "not measured" and "shuffle-news: consistency" in row["measured"]
    # the windows' labels against the model's cutoff: the rules team has no model
    assert (rows["temporal integrity"]["verdict"], rows["temporal integrity"]["measured"]) == ("pass", "no-model")
    # two short test windows on a hand-picked ticker: neither a long horizon nor a broad universe, as measured
    assert rows["long horizons"]["verdict"] == "fail" and "2 test windows covering" in rows["long horizons"]["measured"]
    assert rows["broad universes"]["verdict"] == "fail" and "hand-picked" in rows["broad universes"]["measured"]
    # the analysts' calls of every window's team (it said "no team records" of an evaluation full of them)
    from fincon.report.calibration import calibration

    teams = [out / w["dir"] / json.loads((out / w["dir"] / "results.json").read_text())["median"]["full"]["run_dir"]
             for w in listing]  # fmt: skip
    runs = [[json.loads(x) for x in (t / "decisions.jsonl").read_text().splitlines()] for t in teams]
    from fincon.report.evidence import evidence

    ev = evidence(out)  # each window's calls against its own closes, its last day's against its own files'
    cal, one = calibration(*runs, after=[ev.closes_after(t, r) for t, r in zip(teams, runs)]), calibration(runs[0])
    assert (
        cal["days"] > one["days"]
        and f"over {cal['calls']} analyst calls on {cal['days']} days" in (rows["calibration"]["measured"])
    )
    assert rows["multi-agent disaggregation"]["verdict"] != "not measured"
    assert main(argv) == 0  # resumes: every unit done, the same tables
    assert "resumed" in capsys.readouterr().out
    assert (out / "summary.csv").read_bytes() == first
    assert res["bootstrap_reps"] == 1000
    # another bootstrap count: the same windows (no unit runs), the statistics computed again with it
    again = [*argv[:2], "200", *argv[3:]]
    assert main(again) == 0 and "resumed" in capsys.readouterr().out
    assert json.loads((out / "results.json").read_text())["bootstrap_reps"] == 200
    redone = pd.read_csv(out / "summary.csv").set_index(["universe", "strategy"])
    kept = pd.read_csv(io.BytesIO(first)).set_index(["universe", "strategy"])
    assert redone["median_cr_pct"].equals(kept["median_cr_pct"])  # the windows' figures: the same runs
    assert not redone["sharpe_ci_lo"].equals(kept["sharpe_ci_lo"])  # the intervals: 200 draws, not 1,000
    assert main(argv) == 0 and (out / "summary.csv").read_bytes() == first  # and back: the same bytes
    capsys.readouterr()
    # plot: a window is drawn like an experiment; the whole evaluation (windows over different spans) names them
    png = tmp_path / "window.png"
    assert main(["plot", str(out / listing[0]["dir"]), "--out", str(png)]) == 0  # it said "not a run directory"
    assert capsys.readouterr().out == f"wrote {png} (3 runs)\n" and png.stat().st_size > 5_000  # team, 2 baselines
    assert main(["plot", str(out), "--out", str(png)]) == 2
    assert f"{out} is a rolling evaluation: plot one of its windows ({out / listing[0]['dir']}, " in (
        capsys.readouterr().err
    )

    from fincon.report import write_report

    write_report([out], tmp_path / "a.html")
    write_report([out], tmp_path / "b.html")
    page = (tmp_path / "a.html").read_text(encoding="utf-8")
    assert page == (tmp_path / "b.html").read_text(encoding="utf-8")
    assert '<section id="rolling">' in page and "rolling-1-1-heat" in page and "rolling-1-1-lines" in page
    assert '<section id="metrics">' not in page  # no run of its own: no empty metrics table above the tables
    assert "<li>FLAG: 2 windows: a two-sided Wilcoxon test of 2 pairs cannot give a p under 0.5000" in page
    team = df[df.strategy == "fincon"]
    for e, c in zip(team.excess_cr_pct, team.cr_pct):  # each heatmap cell's text: excess and CR
        assert f"{e:+.2f} pp (CR {c:.2f} %)" in page


def test_an_interrupted_rolling_evaluation_says_so(tmp_path):
    """Ctrl-C or SIGTERM while units run: rolling.json says interrupted and
    how to resume (status.marking, as a one-split experiment), not running."""
    import json

    from fincon.workflow.rolling import run_rolling

    exp = load_experiment(
        None,
        {
            "team.brain": "rules",
            "rolling.window": "1m",
            "rolling.step": "1m",
            "rolling.start": "2022-03-01",
            "rolling.end": "2022-03-31",
            "rolling.universes": ["TSLA"],
        },
    )

    def stopped(_jobs, _done):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_rolling(exp, tmp_path / "r", progress=False, executor=stopped)
    state = json.loads((tmp_path / "r" / "rolling.json").read_text())
    assert state["status"] == "interrupted" and "rerun the same command" in state["error"]


def test_a_config_copy_moves_both_windows_at_once_and_checks_its_values():
    """Config sections validate a copy's updates (a dict where typed settings
    belong is converted, a bad value is one line), all of them together: a
    window after the default test window moves its training window with it."""
    import datetime as dt

    from fincon.config import load_config
    from fincon.errors import ConfigError
    from fincon.workflow.experiment_config import ExperimentConfig, Window

    late = ExperimentConfig().model_copy(
        update={
            "train": Window(start=dt.date(2023, 1, 3), end=dt.date(2023, 6, 30)),
            "test": Window(start=dt.date(2023, 7, 3), end=dt.date(2023, 12, 29)),
        }
    )
    assert late.train.end == dt.date(2023, 6, 30)
    cfg = load_config(None, {}).model_copy(update={"llm": {"model": "qwen2.5-coder-0.5b"}})
    assert cfg.llm.model_dump(mode="json", exclude_unset=True) == {"model": "qwen2.5-coder-0.5b"}
    with pytest.raises(ConfigError, match="llm.temperature"):
        cfg.model_copy(update={"llm": {"temperature": 9}})


STATS_STOPPED = """
import os, signal, sys, threading, time
import numpy as np, pandas as pd
from fincon import stopping
from fincon.workflow.rolling_stats import significance

class Stop(BaseException):
    pass

stopping.install({signal.SIGTERM: Stop})
rng = np.random.default_rng(0)
returns = {u: {n: rng.normal(0, 0.01, 1500) for n in ("buy-and-hold", "fincon", "sma-cross")} for u in "abc"}
summary = pd.DataFrame([{"universe": u, "strategy": n, "windows": 1} for u in "abc" for n in returns[u]])
threading.Timer(3.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
t0 = time.monotonic()
try:
    significance(returns, summary, reps=10**7)  # hours of bootstrap, in two forked workers
except Stop:
    print("stopped", round(time.monotonic() - t0, 1), flush=True)
    time.sleep(0.5)
    print("workers left", len([p for p in __import__("multiprocessing").active_children()]))
"""


@pytest.mark.slow  # a subprocess and 3 s of bootstrap before the stop
def test_a_stop_during_the_statistics_ends_their_workers_at_once():
    """SIGTERM during a rolling evaluation's statistics (2019-2024, 36 windows: the bootstrap of each
    universe in a forked worker) exited 143 only some 45 s later: the pool waited for its workers, which
    inherited fincon's handlers and took the terminate for an exception to report. They now die on it."""
    import os
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", STATS_STOPPED], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)  # fmt: skip
    try:
        out, err = proc.communicate(timeout=60)
    finally:  # before the fix its workers outlived it, computing: none is left behind
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # the group is gone: nothing was left
            pass
    lines = out.split("\n")
    assert lines[0].startswith("stopped ") and float(lines[0].split()[1]) < 10, (out, err)
    assert lines[1] == "workers left 0"


def test_the_pooled_row_pairs_each_window_once_whatever_the_universes_that_traded_it():
    """Found in review: two windows of one stock under three universes that all picked it made six pairs in
    the pooled Wilcoxon (p 0.031, where two pairs cannot give under 0.5) and "6 windows"."""
    from fincon.workflow.rolling_results import summarize

    rows = []
    for u in ("TSLA", "all", "momentum:1"):
        for k, (team, bh) in enumerate(((5.0, 1.0), (3.0, -2.0)), 1):
            for name, cr in (("fincon", team), ("buy-and-hold", bh)):
                rows.append({"universe": u, "window": f"k0{k}", "strategy": name, "cr_pct": cr, "sharpe": 1.0,
                             "mdd_pct": 2.0, "turnover": 1.0, "llm_calls": 0, "llm_cost_usd": 0.0,
                             "model_knowledge": "no-model"})  # fmt: skip
    table = summarize(pd.DataFrame(rows)).set_index(["universe", "strategy"])
    assert table.loc[("TSLA", "fincon"), "wilcoxon_p"] == 0.5
    pooled = table.loc[("pooled", "fincon")]
    assert (pooled["windows"], pooled["wilcoxon_p"], pooled["mean_excess_cr_pct"]) == (2, 0.5, 4.5)


def test_a_rolling_evaluation_says_its_settings_and_a_server_down_before_its_folder(tmp_path, monkeypatch, capsys):
    """Found in review: a rolling evaluation ran none of the one-split experiment's checks of its settings:
    with the model's server down it failed in its first training and left its folder (a finished baseline
    run inside), and --anonymize, --charge-llm and --temperature beside the rules brain went unsaid."""
    from fincon.cli.main import main

    monkeypatch.chdir(tmp_path)
    roll = ["experiment", "--rolling", "2m", "--step", "2m", "--rolling-start", "2022-04-01", "--rolling-end",
            "2022-05-31", "--universe", "TSLA", "--repeats", "1", "--episodes", "2", "--ablations", "full",
            "--baselines", "buy-and-hold", "--no-progress", "--ledger", "off"]  # fmt: skip
    down = ["--brain", "llm", "--llm-backend", "openai", "--llm-base-url", "http://127.0.0.1:9/v1", "--out", "S"]
    assert main([*roll, *down]) == 2
    assert "nothing is listening at http://127.0.0.1:9/v1" in capsys.readouterr().err and not (tmp_path / "S").exists()
    import fincon.workflow.rolling as rolling

    monkeypatch.setattr(rolling, "Study", None)  # the settings are said before anything runs
    with pytest.raises(TypeError):
        main([*roll, "--brain", "rules", "--anonymize", "--charge-llm", "--temperature", "0.5", "--out", "R"])
    err = capsys.readouterr().err
    assert "--anonymize, --charge-llm: no strategy of this run calls a model, so they change nothing here" in err
    assert "--temperature: a setting of the other brain; with the rules brain it changes nothing here" in err


def test_windows_as_long_as_their_step_tile_the_span_from_a_months_end():
    """Found in review: each window's end was its own start plus the window, so a start clipped to a
    month's end was clipped again: 1m windows stepped by 1m from 2022-01-31 tested ..03-27 and then
    03-31.., leaving 03-28..30 in no test window."""
    import datetime as dt

    from fincon.workflow.rolling import windows

    exp = load_experiment(None, {"team.brain": "rules", "rolling.window": "1m", "rolling.step": "1m",
                                 "rolling.start": "2022-01-31", "rolling.end": "2022-06-30",
                                 "rolling.universes": ["TSLA"]})  # fmt: skip
    tests = [w.test for w in windows(exp, dt.date(2023, 1, 1))]
    assert all(b.start == a.end + dt.timedelta(days=1) for a, b in zip(tests, tests[1:]))
    assert (tests[1].start, tests[1].end) == (dt.date(2022, 2, 28), dt.date(2022, 3, 30))


def test_the_few_windows_flag_counts_the_pairs_the_test_reads():
    """Found in review: the flag counted every window, though the Wilcoxon test drops a window whose CR equals
    buy-and-hold's: six windows, one traded as buy-and-hold, showed no flag while no p could go under 0.0625."""
    from fincon.workflow.rolling_results import summarize
    from fincon.workflow.tables import rolling_flags

    rows = []
    for k, (team, bh) in enumerate(((5.0, 1.0), (3.0, -2.0), (2.0, 2.0), (4.0, 1.0), (6.0, 0.0), (1.0, 0.5)), 1):
        for name, cr in (("fincon", team), ("buy-and-hold", bh)):
            rows.append({"universe": "TSLA", "window": f"k0{k}", "strategy": name, "cr_pct": cr, "sharpe": 1.0,
                         "mdd_pct": 2.0, "turnover": 1.0, "llm_calls": 0, "llm_cost_usd": 0.0,
                         "model_knowledge": "no-model"})  # fmt: skip
    table = summarize(pd.DataFrame(rows))
    assert rolling_flags(table.to_dict("records")) == [
        "5 of 6 windows differing from buy-and-hold: a two-sided Wilcoxon test of 5 pairs cannot give a p under "
        "0.0625, whatever the windows show (6 windows at the least to reach 0.05)"
    ]


def test_an_rl_baseline_short_of_training_bars_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    """Found in review: --rolling 2m gave a2c 42 training bars a window; it failed at its first decision,
    after the trainings had run, as "baselines stopped early ... rerun the same command to resume" (exit 3),
    and a rerun failed alike. Refused in one line before the evaluation's folder."""
    from fincon.cli.main import main

    monkeypatch.chdir(tmp_path)
    argv = ["experiment", "--brain", "rules", "--rolling", "2m", "--step", "2m", "--rolling-start", "2022-04-01",
            "--rolling-end", "2022-05-31", "--universe", "TSLA", "--repeats", "1", "--episodes", "1", "--ablations",
            "full", "--baselines", "buy-and-hold,a2c", "--out", "A1", "--no-progress", "--ledger", "off"]  # fmt: skip
    assert main(argv) == 2
    assert "a2c would train on 42 bars of 2022-02-01..2022-03-31 (it needs 60)" in capsys.readouterr().err
    assert not (tmp_path / "A1").exists()
