"""The CLI as a user runs it: tables, --json, run directories, plots, reruns."""

import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from fincon.cli.main import main

RUN_FILES = {
    "config.yaml",
    "equity.csv",
    "positions.csv",
    "trades.csv",
    "decisions.jsonl",
    "metrics.json",
    "summary.json",
    "equity.png",
    "orders.csv",
    "round_trips.csv",
}
#: at the top of a run directory (with the files of a single strategy's run, or beside a comparison's)
TOP_FILES = {"run_summary.csv", "run_manifest.json", "trials.csv"}


def test_json_single_ticker_buy_and_hold(tmp_path, capsys):
    out = tmp_path / "bh"
    code = main(
        [
            "backtest",
            "--ticker",
            "TSLA",
            "--strategy",
            "buy-and-hold",
            "--start",
            "2022-10-05",
            "--end",
            "2023-06-09",
            "--json",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    obj = json.loads(capsys.readouterr().out)
    for key in ("cr_pct", "sharpe", "mdd_pct", "cvar_pct", "cr_paper_pct", "var_pct", "win_rate"):
        assert key in obj
    eq = pd.read_csv(out / "equity.csv")
    assert obj["cr_pct"] == pytest.approx(100 * np.log(eq.value.iloc[-1] / eq.value.iloc[0]), abs=1e-6)
    assert set(p.name for p in out.iterdir()) == RUN_FILES | TOP_FILES
    assert obj["status"] == "complete" and obj["run_dir"] == str(out)


def test_table_shows_strategy_next_to_buy_and_hold(tmp_path, capsys):
    out = tmp_path / "mk"
    assert (
        main(["backtest", "--tickers", "TSLA,MSFT,PFE", "--strategy", "markowitz", "--out", str(out), "--no-progress"])
        == 0
    )
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if "markowitz" in line)
    assert "buy-and-hold (benchmark)" in header
    assert "CVaR %" in text and "max drawdown %" in text
    assert "FLAG:" not in text  # the default window: 170 sessions
    summary = json.loads((out / "summary.json").read_text())
    assert summary["benchmark"]["strategy"] == "buy-and-hold"
    curve = pd.read_csv(out / "benchmark_equity.csv")  # the benchmark's curve, saved with the run
    assert list(curve["date"]) == list(pd.read_csv(out / "equity.csv")["date"])
    assert round(curve["value"].iloc[-1], 2) == round(summary["benchmark"]["final_value"], 2)
    positions = pd.read_csv(out / "positions.csv")
    assert set(positions.columns) == {"date", "ticker", "shares", "weight"}
    assert positions.groupby("date").weight.sum().iloc[1:-1].between(0.999, 1.0 + 1e-9).all()
    # each mu named by its ticker (it was a bare list in run order beside weights a reader reads by ticker)
    first = json.loads((out / "decisions.jsonl").read_text().splitlines()[0])
    assert re.fullmatch(r"mean-variance on \d+ days; mu TSLA -?[\d.]+, MSFT -?[\d.]+, PFE -?[\d.]+", first["rationale"])


def test_a_window_too_short_for_its_ratios_is_flagged_under_the_table(tmp_path, capsys):
    """Found by hand: a 10-session run printed a Sharpe of 7.9 and a Sortino of 23 as figures like any
    other. Under 20 daily returns the table says they are noise."""
    argv = ["backtest", "--ticker", "TSLA", "--strategy", "sma-cross", "--start", "2022-10-03", "--end",
            "2022-10-14", "--out", str(tmp_path / "short"), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert re.search(
        r"\ndays +10 +10\nFLAG: 9 daily returns: too few for Sharpe, Sortino, volatility, VaR and CVaR to mean", text
    )


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_several_strategies_make_a_comparison_directory(tmp_path, capsys):
    out = tmp_path / "cmp"
    assert (
        main(
            [
                "backtest",
                "--tickers",
                "TSLA,MSFT,PFE",
                "--strategy",
                "buy-and-hold,markowitz,equal-weight",
                "--json",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    obj = json.loads(capsys.readouterr().out)
    assert set(obj["strategies"]) == {"buy-and-hold", "markowitz", "equal-weight"}
    for name in obj["strategies"]:
        assert set(p.name for p in (out / name).iterdir()) == RUN_FILES
    assert TOP_FILES <= set(p.name for p in out.iterdir())
    assert (out / "equity.png").stat().st_size > 10_000


def test_same_config_gives_byte_identical_run(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    args = [
        "backtest",
        "--tickers",
        "TSLA,MSFT",
        "--strategy",
        "markowitz",
        "--param",
        "markowitz.lookback=40",
        "--commission",
        "0.001",
        "--no-progress",
    ]
    assert main([*args, "--out", str(a)]) == 0
    # rerun from the resolved config the first run wrote
    assert main(["backtest", "--config", str(a / "config.yaml"), "--no-progress", "--out", str(b)]) == 0
    for name in sorted(RUN_FILES | TOP_FILES):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_existing_run_directory_is_never_overwritten(tmp_path, capsys):
    out = tmp_path / "r"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    assert main(["backtest", "--ticker", "TSLA", "--out", str(out), "--no-progress"]) == 0
    assert (out / "precious.txt").read_text() == "keep me"
    assert (tmp_path / "r-2" / "metrics.json").exists()
    assert "r-2" in capsys.readouterr().out


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_plot_command_draws_several_runs(tmp_path, capsys):
    runs = []
    for s in ("buy-and-hold", "sma-cross"):
        runs.append(tmp_path / s)
        assert (
            main(
                [
                    "backtest",
                    "--ticker",
                    "NVDA",
                    "--strategy",
                    s,
                    "--out",
                    str(runs[-1]),
                    "--no-progress",
                    "--no-benchmark",
                ]
            )
            == 0
        )
    png = tmp_path / "cmp.png"
    assert main(["plot", *map(str, runs), "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert "share no day" not in capsys.readouterr().out
    # a run of another window beside them: said (their curves are side by side, not against each other)
    early = tmp_path / "early"
    assert main(["backtest", "--ticker", "NVDA", "--start", "2019-01-02", "--end", "2019-02-28", "--out", str(early),
                 "--no-progress", "--no-benchmark"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["plot", *map(str, runs), str(early), "--out", str(png)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"note: {early} (2019-01-02..2019-02-28) and ")
    assert main(["plot", str(tmp_path / "nothing")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_console_script_help_teaches():
    proc = subprocess.run(
        [sys.executable, "-m", "fincon.cli.main", "backtest", "--help"], capture_output=True, text=True, check=True
    )
    for word in ("--ticker", "--strategy", "--fill", "--param", "examples:", "markowitz", "decisions.jsonl"):
        assert word in proc.stdout


def test_every_command_and_sub_action_says_what_it_does_at_the_top_of_its_help():
    """`fincon llm cache --help` (and nine other sub-actions') printed its
    usage and flags with no word of what it does."""
    import argparse

    from fincon.cli.main import build_parser

    def walk(parser, path):
        yield path, parser
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, child in a.choices.items():
                    yield from walk(child, f"{path} {name}")

    silent = [path for path, p in walk(build_parser(), "fincon") if not (p.description or "").strip()]
    assert silent == []


def test_the_table_counts_fills_and_gives_the_win_rate_of_round_trips(tmp_path, capsys):
    """Found reading sma-cross on TSLA (2022-10-05..2023-06-09): "trades 5, win rate 0.67" (two
    thirds of five?). The five are fills, the win rate is over the three round trips they make (one
    still open, marked at the last close). Each row says what it counts, and both match the files."""
    out = tmp_path / "sma"
    argv = ["backtest", "--ticker", "TSLA", "--strategy", "sma-cross", "--start", "2022-10-05", "--end", "2023-06-09",
            "--no-benchmark", "--no-progress", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    rows = {line[:40].strip(): line[40:].strip() for line in capsys.readouterr().out.splitlines()}
    fills, trips = pd.read_csv(out / "trades.csv"), pd.read_csv(out / "round_trips.csv")
    assert (len(fills), len(trips)) == (5, 3)
    assert rows["fills"] == "5"
    assert rows["win rate (round trips)"] == f"{(trips['pnl'] > 0).mean():.2f}" == "0.67"


@pytest.mark.slow
def test_the_win_rate_is_the_share_of_round_trips_csv_that_made_money(tmp_path):
    """The rules team on TSLA (2022-10-05..11-15) wrote win rate 0.667 and a round_trips.csv of 18
    lots of which 10 made money (0.556): the rate counted backtrader's trades (a position from open
    to flat), the file pyfolio's round trips (fills matched first in, first out). One definition:
    the file's, which a reader can check line by line."""
    out = tmp_path / "team"
    argv = ["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--brain", "rules", "--start", "2022-10-05",
            "--end", "2022-11-15", "--no-benchmark", "--no-progress", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    trips = pd.read_csv(out / "round_trips.csv")
    metrics = json.loads((out / "metrics.json").read_text())
    # 10 lots and 8 winners since the alert's cut of a held stock stopped compounding (2026-12-01; 18 and 10)
    assert len(trips) == 10 and (trips["pnl"] > 0).sum() == 8
    assert metrics["win_rate"] == pytest.approx(8 / 10, abs=1e-9)


def test_a_full_disk_is_one_line_and_nothing_half_written(tmp_path, monkeypatch, capsys):
    """Found in review: --out on a full filesystem ended in a 54-line traceback from PIL writing
    equity.png (a training's, from chromadb's "database or disk is full"). One line; the staging folder
    goes as for any failure."""
    import errno
    import sqlite3

    from fincon.engine import record

    argv = ["backtest", "--ticker", "TSLA", "--strategy", "sma-cross,buy-and-hold", "--start", "2022-10-05",
            "--end", "2022-10-31", "--ledger", "off", "--no-progress", "--out", str(tmp_path / "x")]  # fmt: skip
    for exc in (OSError(errno.ENOSPC, "No space left on device", "equity.png"),
                sqlite3.OperationalError("database or disk is full")):  # fmt: skip

        def full(*a, exc=exc, **k):
            raise exc

        monkeypatch.setattr(record, "draw", full)
        monkeypatch.setattr("fincon.workflow.runner.draw", full)
        capsys.readouterr()
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "free some space (or write elsewhere)" in err, err
        assert "partial output removed" in err and list(tmp_path.iterdir()) == []
