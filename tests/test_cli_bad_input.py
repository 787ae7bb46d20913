"""Bad input, table-driven: every case is one command a user could type.

Each must exit with status 2, print exactly one line (``fincon: error: ...``)
on stderr, and leave the working directory exactly as it was (no run
directory, no empty ``runs/``, no cache file). New commands join the table.
"""

from __future__ import annotations

import pytest

from fincon.cli.main import main
from fincon.testing.badinput import check_case, fixtures

WINDOW = ["--start", "2022-10-05", "--end", "2022-10-20"]


BT = ["backtest", "--ticker", "TSLA", "--no-progress", *WINDOW]

# id -> (argv with {fixture} placeholders, a fragment the one line must contain)
CASES: dict[str, tuple[list[str], str]] = {
    "inf close in csv": (
        ["backtest", "--ticker", "TSLA", "--data", "{inf_close}", "--start", "2022-10-05", "--end", "2022-10-20"],
        "infinite",
    ),
    "inf adj close in csv": (
        ["backtest", "--ticker", "TSLA", "--data", "{inf_adj}", "--start", "2022-10-05", "--end", "2022-10-20"],
        "infinite Adj Close",
    ),
    # found in review: "missing column(s) Date, Open, ..." of a header that holds them in another case or separator
    "header in lower case": (["backtest", "--data", "{lower_header}", *WINDOW], "names are read exactly"),
    "semicolon-separated csv": (["backtest", "--data", "{semicolons}", *WINDOW], "fincon reads commas"),
    "day-first dates": (["backtest", "--ticker", "TSLA", "--data", "{day_first}", *WINDOW], "not YYYY-MM-DD"),
    "corrupt csv.gz": (["backtest", "--ticker", "TSLA", "--data", "{corrupt_gz}", *WINDOW], "cannot read CSV"),
    "cash inf": ([*BT, "--cash", "inf"], "finite"),
    "cash not a number": ([*BT, "--cash", "lots"], "invalid float value"),
    "out dot": ([*BT, "--out", "."], "does not name a new run directory"),
    "out root": ([*BT, "--out", "/"], "does not name a new run directory"),
    "out empty": ([*BT, "--out", ""], "does not name a new run directory"),
    "out existing file": ([*BT, "--out", "{a_file}"], "is not a directory"),
    "out dev null": ([*BT, "--out", "/dev/null"], "is not a directory"),
    "config latin-1": (["backtest", "--config", "{latin1}"], "not UTF-8"),
    "config binary": (["backtest", "--config", "{binary}"], "not UTF-8"),
    # found in review: a traceback (PyYAML's ValueError "month must be in 1..12"), from every YAML a user gives
    "config date that is no date": (["backtest", "--config", "{no_date}"], "line 2: 2022-13-45 is not a calendar date"),
    # found in review: PyYAML keeps the last of a key given twice, and the first was dropped without a word
    "config key given twice": (["backtest", "--config", "{dup_key}"], "line 3: broker is given twice"),
    "experiment config date that is no date": (
        ["experiment", "--brain", "rules", "--config", "{no_date}"],
        "2022-13-45 is not a calendar date",
    ),
    "train config date that is no date": (
        ["train", "--brain", "rules", "--config", "{no_date}"],
        "not a calendar date",
    ),
    "llm prices date that is no date": ([*BT, "--llm-prices", "{no_date}"], "--llm-prices"),
    "param date that is no date": ([*BT, "--strategy", "sma-cross", "--param", "sma-cross.fast=2022-13-45"], "fast"),
    # found in review: pydantic read a yes/no as 1 (a 1-day average; a config's cash: true ran with $1)
    "param yes/no for a number": (
        [*BT, "--strategy", "sma-cross", "--param", "sma-cross.fast=true"],
        "fast: true is a yes/no, and fast is a number",
    ),  # fmt: skip
    "param for a strategy not run": ([*BT, "--param", "sma_cross.fast=5"], "did you mean 'sma-cross'"),
    # found in review: an empty value ran the default, a key given twice kept the last, --cas was --cash
    "param without a value": ([*BT, "--strategy", "markowitz", "--param", "markowitz.lookback="], "gives no value"),
    "param given twice": (
        [*BT, "--strategy", "sma-cross", "--param", "sma-cross.fast=5", "--param", "sma-cross.fast=6"],
        "--param sma-cross.fast is given twice",
    ),  # fmt: skip
    "abbreviated flag beside the flag": ([*BT, "--cash", "5000", "--cas", "100"], "--cas: did you mean --cash?"),
    "variant of no strategy": ([*BT, "--strategy", "fincn@rules"], "did you mean 'fincon'"),
    "variant label with a dot": ([*BT, "--strategy", "sma-cross@a.b"], "after @ give a label"),
    "directions for a ticker not run": (
        [
            *BT,
            "--strategy",
            "markowitz",
            "--param",
            "markowitz.form=signed",
            "--param",
            "markowitz.directions={{AAPL: buy}}",
        ],
        "AAPL",
    ),
    "api key pasted as api_key_env": (["backtest", "--config", "{key_cfg}"], "api_key_env"),
    "unknown ticker": (["backtest", "--ticker", "NOPE", *WINDOW], "NOPE"),
    # found in review: argparse kept the last of a repeated flag and dropped the first without a word
    # found in review: a check as the run starts named the config key ("strategy_params.fincon.events: ...")
    "events a path that does not exist": (
        [*BT, "--strategy", "fincon", "--brain", "rules", "--events", "{a_file}.gone"],
        "a_file.gone' does not exist (give 'sample' or a directory of TICKER.jsonl files)",
    ),
    "events a file": ([*BT, "--strategy", "fincon", "--brain", "rules", "--events", "{a_file}"], "error: --events: "),
    # found in review: de-duplicated without a word, where a ticker given twice is refused
    "a strategy twice in its list": ([*BT, "--strategy", "sma-cross,sma-cross"], "sma-cross given more than once"),
    "a baseline twice in its list": (
        ["experiment", "--brain", "rules", "--baselines", "buy-and-hold,buy-and-hold"],
        "--baselines: buy-and-hold given more than once",
    ),
    "a flag given twice": ([*BT, "--strategy", "sma-cross", "--strategy", "markowitz"], "--strategy given twice"),
    "two names of one flag": (["backtest", "--tickers", "MSFT", *BT[1:]], "--tickers and --ticker set one value"),
    # found in review: the hint said "pick one of these with --ticker tsla", which is read as TSLA again
    "a ticker's file in lower case": (
        ["backtest", "--ticker", "tsla", "--data", "{lower_name}", *WINDOW],
        "has tsla.csv.gz, not TSLA.csv.gz (tickers are read in upper case): rename the file TSLA.csv.gz",
    ),
    "a run directory as --data": (["backtest", "--data", "{a_run}", *WINDOW], "is a fincon run directory"),
    "no --ticker on data without the default": (
        ["backtest", "--data", "{msft_only}", *WINDOW],
        "available: MSFT (TSLA is the default ticker: pick one of these with --ticker MSFT)",
    ),
    "start after end": (["backtest", "--start", "2023-01-10", "--end", "2023-01-01"], "after"),
    "llm server down on the first day": (
        [
            *BT,
            "--strategy",
            "llm-trader",
            "--no-benchmark",
            "--llm-backend",
            "openai",
            "--llm-base-url",
            "http://127.0.0.1:9/v1",
            "--llm-model",
            "x",
            "--llm-knowledge-cutoff",  # the window is after it: no knowledge warning beside the error
            "2020-01-01",
        ],
        "LLM server http://127.0.0.1:9/v1",
    ),
    "plot into /proc": (["plot", "{run_ok}", "--out", "/proc/x.png"], "cannot write"),
    "report under a file": (["report", "{run_ok}", "--out", "{a_file}/r.html"], "is a file, not a folder"),
    # found in review: the HTML page was written into r.png (plot refuses a name that is not .png)
    "report into a .png": (
        ["report", "{run_ok}", "--out", "r.png"],
        "--out r.png: the report is an HTML page; give a .html",
    ),
    "plot under a file": (["plot", "{run_ok}", "--out", "{a_file}/x.png"], "is a file, not a folder"),  # "File exists"
    # found in review: a path that does not exist was "not a run directory (no equity.csv)"
    "plot a path that does not exist": (["plot", "{a_file}.gone", "--out", "x.png"], "a_file.gone does not exist"),
    "card of a path that does not exist": (["report", "--card", "{a_file}.gone"], "a_file.gone does not exist"),
    "explain a path that does not exist": (
        ["explain", "{a_file}.gone", "--date", "2022-10-10"],
        "a_file.gone does not exist",
    ),
    "plot empty equity.csv": (["plot", "{run_empty}", "--out", "x.png"], "equity.csv"),
    "plot garbage equity.csv": (["plot", "{run_garbage}", "--out", "x.png"], "equity.csv"),
    "llm cache on a non-sqlite file": (["llm", "cache", "--path", "{notsqlite}"], "notsqlite"),
    # found in review: "give another file, or off", and `fincon ledger --ledger off` is refused
    "ledger of a file that is no ledger": (
        ["ledger", "--ledger", "{notsqlite}"],
        "is not a fincon trial ledger (it is not a SQLite file); it was left as it is: give another file",
    ),
    "llm model dir in /proc": (["llm", "model", "--model-dir", "/proc/xx"], "/proc/xx"),
    "data sample onto a file": (
        ["data", "sample", "--tickers", "TSLA", "--no-audio", "--out", "{a_file}"],
        "exists and is a file",
    ),
    # a Saturday: the sample's last session before it named (it said "pick a weekday", of a coin's missing day too)
    "data show on a day without a session": (
        ["data", "show", "--ticker", "TSLA", "--date", "2022-11-05", "--embedder", "hashing"],
        "2022-11-05 is no session of TSLA (its prices have no bar that day); the last before it: 2022-11-04",
    ),
    "data show after the corpus": (
        ["data", "show", "--ticker", "TSLA", "--date", "2030-01-01", "--embedder", "hashing"],
        "after",
    ),
    "range slippage on close-only prices": (
        [
            "backtest",
            "--ticker",
            "TSLA",
            "--data",
            "{close_only}",
            *WINDOW,
            "--slippage-model",
            "range",
            "--slippage",
            "0.5",
        ],
        "--slippage-model range needs High and Low",
    ),
    "participation cap on close-only prices": (
        ["backtest", "--ticker", "TSLA", "--data", "{close_only}", *WINDOW, "--participation", "0.025"],
        "--participation needs a Volume",
    ),
    "percent slippage too large": (
        [*BT, "--slippage", "0.5"],
        "--slippage 0.5: Input should be less than 0.1 (the percent slippage model)",
    ),
    "participation above one": ([*BT, "--participation", "1.5"], "participation"),
    "rolling length unknown": (["experiment", "--brain", "rules", "--rolling", "1q"], "not a length"),
    "rolling step without rolling": (["experiment", "--brain", "rules", "--step", "6m"], "add --rolling"),
    "rolling universe rule unknown": (
        ["experiment", "--brain", "rules", "--rolling", "1y", "--universe", "best:5"],
        "unknown universe rule",
    ),
    "rolling universe larger than the data": (
        ["experiment", "--brain", "rules", "--rolling", "1y", "--universe", "random:50:1"],
        "only 40 ticker(s)",
    ),
    "rolling span after the data": (
        [
            "experiment",
            "--brain",
            "rules",
            "--rolling",
            "1y",
            "--rolling-start",
            "2025-01-01",
            "--rolling-end",
            "2026-01-01",
        ],
        "no 1y window fits",
    ),
    "rolling window outside the corpus": (
        [
            "experiment",
            "--brain",
            "rules",
            "--rolling",
            "1y",
            "--rolling-start",
            "2019-01-01",
            "--rolling-end",
            "2020-12-31",
            "--universe",
            "TSLA",
        ],
        "event corpus",
    ),
    "rolling without buy-and-hold": (
        ["experiment", "--brain", "rules", "--rolling", "1y", "--baselines", "markowitz"],
        "buy-and-hold must be among",
    ),
    "transcribe a directory": (["transcribe", "{audio_dir}"], "is a directory"),
    "transcribe an empty file": (["transcribe", "{empty_ogg}"], "empty"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_gets_one_line_and_exit_2(case, tmp_path, monkeypatch, capfd):
    argv, fragment = CASES[case]
    out, err = check_case(main, fixtures, argv, fragment, tmp_path, monkeypatch, capfd)
    assert "sk-proj-abc123def456" not in err + out


def test_a_config_may_merge_a_mapping_and_override_its_keys(tmp_path):
    """Found in review: YAML's merge key (``<<: *base``) was refused with PyYAML's internal "could not
    determine a constructor"; a key given twice is still refused."""
    from fincon.config import load_yaml

    assert load_yaml("a: &base {fast: 5, slow: 20}\nb: {<<: *base, fast: 10}\n") == {
        "a": {"fast": 5, "slow": 20},
        "b": {"fast": 10, "slow": 20},
    }
    with pytest.raises(Exception, match="fast is given twice"):
        load_yaml("b: {fast: 5, fast: 10}\n")
