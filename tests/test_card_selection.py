"""The card's selection row (fincon.report.selection): a run's Sharpe ratio deflated by what the trial
ledger holds beside it. Found by hand: sma-cross on five sample tickers, the card of the best graded each
row as if it were the only run made."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kurtosis, norm, skew

from fincon.cli.main import main
from fincon.report.card import NONE, run_card
from fincon.report.evidence import FAIL, Evidence
from fincon.report.selection import selection

TICKERS = ("NVDA", "TSLA", "MSFT", "AAPL", "AMZN")


def _row(card):
    return next(r for r in card["rows"] if r["point"] == "selection")


def _returns(run: Path) -> np.ndarray:
    v = pd.read_csv(run / "equity.csv")["value"].to_numpy(dtype=float)
    return v[1:] / v[:-1] - 1.0


def _sr(r):
    return r.mean() / r.std(ddof=1)


def dsr_by_hand(r: np.ndarray, sharpes: list[float]) -> float:
    """Bailey & López de Prado: PSR against the expected best of N trials with no edge, written out here
    (not fincon.risk.significance): E[max] = sqrt(V) ((1 - g) z(1 - 1/N) + g z(1 - 1/(N e)))."""
    n, sr = len(sharpes), _sr(r)
    g = 0.5772156649015329
    star = (
        0.0
        if n < 2
        else math.sqrt(np.var(sharpes, ddof=1)) * ((1 - g) * norm.ppf(1 - 1 / n) + g * norm.ppf(1 - 1 / (n * math.e)))
    )
    sk, ku = skew(r), kurtosis(r, fisher=False)
    return float(norm.cdf((sr - star) * math.sqrt(len(r) - 1) / math.sqrt(1 - sk * sr + (ku - 1) / 4 * sr * sr)))


@pytest.mark.slow  # five backtests
def test_the_best_of_five_tickers_is_deflated_by_the_four_tried_beside_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    ledger = tmp_path / "trials.sqlite"
    run = ["backtest", "--strategy", "sma-cross", "--no-progress", "--no-benchmark", "--ledger", str(ledger)]
    assert main([*run, "--ticker", "NVDA", "--out", "NVDA"]) == 0
    nvda = _returns(tmp_path / "NVDA")
    alone = _row(run_card(tmp_path / "NVDA", ledger=ledger))
    # one trial: the DSR is the PSR against zero
    psr = dsr_by_hand(nvda, [_sr(nvda)])
    assert alone["measured"].startswith(f"DSR {psr:.2f} of a daily Sharpe {_sr(nvda):.3f} over {len(nvda)} days")
    assert "deflated by 1 trial (1 in NVDA 2022-10-05..2023-06-09)" in alone["measured"]
    assert alone["verdict"] == ("pass" if psr >= 0.95 else "fail")

    for t in TICKERS[1:]:
        assert main([*run, "--ticker", t, "--out", t]) == 0
    sharpes = [_sr(_returns(tmp_path / t)) for t in TICKERS]
    for t in TICKERS:
        row = _row(run_card(tmp_path / t, ledger=ledger))
        dsr = dsr_by_hand(_returns(tmp_path / t), sharpes)
        assert row["measured"].startswith(f"DSR {dsr:.2f} "), (t, row)
        assert "deflated by 5 trials (1 in " in row["measured"]
        others = ", ".join(f"{o} 1 trial" for o in sorted(set(TICKERS) - {t}))
        assert f"{others} on other tickers over the same days" in row["measured"]
        assert row["verdict"] == ("pass" if dsr >= 0.95 else "fail"), (t, dsr)
        if dsr < 0.95:
            assert row["measured"].endswith("under 0.95, not told apart from the best of 5 tries with no edge")
    # the tries beside it cost NVDA's result what luck among five would give
    assert dsr_by_hand(nvda, sharpes) < psr

    # the CLI reads the ledger it is given; off, or a ledger that does not hold the run: not measured
    capsys.readouterr()
    assert main(["report", "--card", "NVDA", "--ledger", str(ledger)]) == 0
    assert "selection                    " in capsys.readouterr().out
    off = _row(run_card(tmp_path / "NVDA"))
    assert off == {"checklist": "fincon's checks", "point": "selection", "verdict": NONE,
                   "measured": "the trial ledger not read (`fincon report --card RUN` reads it; a run's HTML page does not)"}  # fmt: skip
    other = tmp_path / "other.sqlite"
    assert main([*run[:-1], str(other), "--ticker", "TSLA", "--out", "elsewhere"]) == 0
    missing = _row(run_card(tmp_path / "NVDA", ledger=other))
    assert missing["verdict"] == NONE and "does not hold this run" in missing["measured"]
    nowhere = _row(run_card(tmp_path / "NVDA", ledger=tmp_path / "none.sqlite"))["measured"]
    assert nowhere.startswith("no trial ledger at ") and not (tmp_path / "none.sqlite").exists()
    # the page reads no ledger: a --ledger without --card is refused in one line
    assert main(["report", "NVDA", "--ledger", str(ledger)]) == 2
    assert "--ledger goes with --card" in capsys.readouterr().err


def test_a_rolling_evaluation_and_a_card_without_a_ledger_are_not_measured():
    def ev(rolling=None, ledger=None):
        return Evidence(Path("x"), None, None, rolling, {}, {}, {}, [], None, (), ledger)

    assert selection(ev(rolling={}))[0] == NONE
    assert selection(ev())[1].startswith("the trial ledger not read")
    assert selection(ev(ledger=Path("l.sqlite"))) == (
        NONE,
        "no trial in its trials.csv names this run (a control, or a run from before the trial ledger)",
    )


def _run(folder: Path, values: list[float], ledger: Path, strategy: str = "x") -> Path:
    """A run directory as the card reads it (equity.csv, trials.csv), its trial in ``ledger``."""
    from fincon.workflow import trials

    folder.mkdir()
    days = pd.bdate_range("2022-10-03", periods=len(values))
    pd.DataFrame({"date": days.strftime("%Y-%m-%d"), "value": values}).to_csv(folder / "equity.csv", index=False)
    row = trials.row(config_hash=strategy, strategy=strategy, tickers=["TSLA"], start="2022-10-03",
                     end=str(days[-1].date()), values=values, metrics={})  # fmt: skip
    (folder / "trials.csv").write_text(trials.rows_csv([row]))
    trials.append(ledger, [row])
    return folder


def test_a_series_that_never_moved_and_a_family_without_a_spread_are_not_measured(tmp_path):
    """The demo's team held cash for 60 days: the row said "4 trials ... fewer than two Sharpe ratios" of a
    family that had two; a flat series has no Sharpe ratio to test, whatever the family holds."""

    def card(run, ledger):
        return selection(Evidence(run, run, None, None, {}, {}, {}, [], None, (), ledger))

    flat = _run(tmp_path / "flat", [100.0] * 31, tmp_path / "a.sqlite")
    assert card(flat, tmp_path / "a.sqlite") == (
        NONE,
        "a series that never moved over 30 days: no Sharpe ratio to test",
    )
    ledger = tmp_path / "b.sqlite"
    rng = np.random.default_rng(0)
    moved = _run(tmp_path / "moved", list(100 * np.cumprod(1 + rng.normal(0, 0.01, 31))), ledger, "y")
    short = _run(tmp_path / "short", [100.0, 101.0, 100.5, 102.0], ledger, "z")
    # two trials, one Sharpe ratio of 20 days or more (a 3-day one's is noise, kept out): no spread to deflate by
    assert card(moved, ledger) == (
        NONE,
        "2 trials (2 in TSLA 2022-10-03..2022-11-14) and fewer than two Sharpe ratios of 20 days or more among "
        "them: no spread to deflate by",
    )
    assert card(short, ledger) == (NONE, "3 daily returns: too few for a Sharpe ratio to mean anything (under 20)")
    # in a family of three with a spread (its own 0 and the moved one's): it never moved, and says so
    flat = _run(tmp_path / "flat-b", [100.0] * 31, ledger, "w")
    assert card(flat, ledger) == (NONE, "a series that never moved over 30 days: no Sharpe ratio to test")


def test_one_invested_day_and_a_ruined_book_are_not_a_selection_pass(tmp_path):
    """Found in review: sma-cross flat for 76 of 77 days then +10.8 % passed "selection" with DSR 0.97 over
    77 days (the one return's skew made it sure); a book that fell below zero (a rejected cover) kept
    Sharpe ratios of returns whose sign flipped with it."""

    def card(run, ledger):
        return selection(Evidence(run, run, None, None, {}, {}, {}, [], None, (), ledger))

    ledger = tmp_path / "l.sqlite"
    once = _run(tmp_path / "once", [1_000_000.0] * 77 + [1_108_000.0], ledger, "once")
    assert card(once, ledger) == (
        NONE,
        "1 of 77 daily returns moved (the book in cash the rest): too few for a Sharpe ratio to mean anything "
        "(under 20)",
    )
    ruined = _run(tmp_path / "ruined", [100.0 + k for k in range(15)] + [-50.0] * 5 + [80.0 + k for k in range(15)],
                  ledger, "ruined")  # fmt: skip
    assert card(ruined, ledger) == (
        FAIL,
        "the book's value fell to zero or below: no Sharpe ratio of its returns means anything",
    )
    from fincon.workflow import trials

    assert trials.daily_sharpe([100.0, 90.0, -10.0, -5.0, 20.0]) is None  # kept out of the family's spread


def test_the_selection_row_says_its_daily_sharpe_is_of_simple_returns(tmp_path):
    """Found in review: the row's "daily Sharpe" (simple returns, per day, no risk-free rate) sat unlabelled
    beside a headline Sharpe of log returns less the risk-free rate: a run with CR -1.7 % and Sharpe -0.145
    read a daily Sharpe of +0.013. The numbers stay; the row says which returns they are."""
    from fincon.risk.significance import sharpe

    ledger = tmp_path / "l.sqlite"
    rng = np.random.default_rng(3)
    runs = {}
    for name in ("a", "b"):
        values = list(1e6 * np.cumprod(1 + rng.normal(0.0005, 0.01, 41)))
        runs[name] = (_run(tmp_path / name, values, ledger, name), np.asarray(values))
    run, v = runs["a"]
    measured = selection(Evidence(run, run, None, None, {}, {}, {}, [], None, (), ledger))[1]
    sr = sharpe(v[1:] / v[:-1] - 1.0)  # the simple returns' per-day figure, as before
    assert measured.startswith(f"DSR 0.40 of a daily Sharpe {sr:.3f} over 40 days, deflated by 2 trials (2 in TSLA ")
    assert measured.endswith(
        "); a daily Sharpe of simple returns, not annualised, no risk-free rate (the headline Sharpe, annualised, of "
        "log returns by default, less it, can differ in sign): under 0.95, not told apart from the best of 2 tries "
        "with no edge"
    )


def test_an_equity_curve_that_is_not_the_series_the_ledger_recorded_is_not_measured(tmp_path):
    """Found in review: the row graded equity.csv but checked that the ledger holds the run by trials.csv's
    digest alone: TSLA's trials.csv beside another curve read "DSR ..." of a series the ledger never counted.
    One within equity.csv's rounding (6 decimals of a value) is the series, its digest aside (found by hand:
    NVDA's sma-cross on the sample digests otherwise than the values its run held)."""
    from fincon.workflow import trials

    def card(run, ledger):
        return selection(Evidence(run, run, None, None, {}, {}, {}, [], None, (), ledger))

    ledger = tmp_path / "l.sqlite"
    rng = np.random.default_rng(5)
    run = _run(tmp_path / "a", list(1e6 * np.cumprod(1 + rng.normal(0.0005, 0.01, 41))), ledger, "a")
    _run(tmp_path / "b", list(1e6 * np.cumprod(1 + rng.normal(0.0, 0.01, 41))), ledger, "b")
    assert card(run, ledger)[1].startswith("DSR ")
    other = 1e6 * np.cumprod(1 + rng.normal(0.003, 0.01, 41))  # another series under the same trials.csv
    pd.DataFrame({"date": pd.bdate_range("2022-10-03", periods=41).strftime("%Y-%m-%d"), "value": other}).to_csv(
        run / "equity.csv", index=False
    )
    assert card(run, ledger) == (
        NONE,
        "its equity.csv is not the series the trial ledger recorded of this run (its returns are not those of the "
        "trial its trials.csv names): the tries counted beside that trial are not this series'",
    )
    # a run's own curve as the engine writes it (%.6f) whose digest differs from its values': the series
    for seed in range(100):
        values = 1e6 * np.cumprod(1 + np.random.default_rng(seed).normal(0.0005, 0.01, 61))
        if trials.returns_digest(values) != trials.returns_digest(np.round(values, 6)):
            break
    else:
        raise AssertionError("no series whose rounding changes its digest")
    rounded = _run(tmp_path / "r", list(values), ledger, "r")
    days = pd.bdate_range("2022-10-03", periods=61).strftime("%Y-%m-%d")
    pd.DataFrame({"date": days, "value": values}).to_csv(rounded / "equity.csv", index=False, float_format="%.6f")
    assert trials.returns_digest(pd.read_csv(rounded / "equity.csv")["value"]) != trials.returns_digest(values)
    assert card(rounded, ledger)[1].startswith("DSR ")


@pytest.mark.parametrize(
    "dsr, verdict, said",
    [(0.9496, FAIL, "DSR 0.9496 "), (0.94999991, FAIL, "DSR 0.9499999 "), (0.95, "pass", "DSR 0.95 "),
     (0.9549, "pass", "DSR 0.95 "), (0.9449, FAIL, "DSR 0.94 ")],
)  # fmt: skip
def test_the_dsr_is_printed_on_the_side_of_the_bar_its_verdict_read(tmp_path, monkeypatch, dsr, verdict, said):
    """Found in review: a DSR of 0.9496 printed "DSR 0.95 ...: under 0.95" and failed."""
    from fincon.risk import significance

    ledger = tmp_path / "l.sqlite"
    rng = np.random.default_rng(3)
    run = _run(tmp_path / "a", list(1e6 * np.cumprod(1 + rng.normal(0.0005, 0.01, 41))), ledger, "a")
    monkeypatch.setattr(significance, "track_record", lambda r, n, var: {"dsr": dsr})
    got = selection(Evidence(run, run, None, None, {}, {}, {}, [], None, (), ledger))
    assert got[0] == verdict and got[1].startswith(said), got
