"""Bad input, fourth round (issue 42): a file fincon did not write is never
replaced or altered, a ledger that is not one is refused before the work,
a verdict that measured nothing says so, and no flag is accepted and then
ignored.

The same harness as the earlier rounds (``fincon.testing.badinput``): each
case is one command a user could type, which must exit 2 with exactly one
``fincon: error: ...`` line naming the cause and leave every file under the
test's folder as it was, byte for byte.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from fincon.cli.main import main
from fincon.testing.badinput import check_case

SMA = ["backtest", "--ticker", "TSLA", "--strategy", "sma-cross", "--no-progress", "--start", "2022-10-05",
       "--end", "2022-11-01"]  # fmt: skip
EXP = ["experiment", "--ticker", "TSLA", "--brain", "rules", "--no-progress", "--repeats", "1", "--episodes", "1",
       "--train-start", "2022-04-01", "--train-end", "2022-04-08", "--test-start", "2022-05-02",
       "--test-end", "2022-05-10"]  # fmt: skip
NUMERIC = ["eval", "numeric", "--brain", "rules", "--limit", "3"]
TEAM = ["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--brain", "rules"]
SERVER = ["--llm-backend", "openai", "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m",
          "--llm-knowledge-cutoff", "2020-01-01"]  # fmt: skip
ASK = ["llm", "ask", "hi", "--llm-backend", "openai", "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m",
       "--llm-cache", "read-write", "--llm-cache-path"]  # fmt: skip


def _sqlite(path: Path, ddl: str) -> str:
    conn = sqlite3.connect(path)
    conn.execute(ddl)
    conn.execute("INSERT INTO " + ddl.split()[2] + " VALUES (" + ", ".join("1" for _ in ddl.split(",")) + ")")
    conn.commit()
    conn.close()
    return str(path)


def fixtures(root: Path) -> dict[str, str]:
    root.mkdir()
    f = {}
    (root / "notes.txt").write_text("my thesis\n")
    f["notes"] = str(root / "notes.txt")
    (root / "mine.json").write_text('{"mine": true}\n')  # JSON of the user's, not fincon's
    f["mine_json"] = str(root / "mine.json")
    (root / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n my own picture")
    f["own_png"] = str(root / "plot.png")
    f["users_db"] = _sqlite(root / "mine.db", "CREATE TABLE notes (x)")
    f["foreign_trials"] = _sqlite(root / "other.db", "CREATE TABLE trials (a, b)")
    f["foreign_calls"] = _sqlite(root / "calls.db", "CREATE TABLE calls (a, b)")
    (root / "corrupt.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x07" * 200)
    f["corrupt"] = str(root / "corrupt.sqlite")
    f["run"] = str(root / "run")  # a path the run would write (must not appear)
    f["unnamed"] = _unnamed_dataset(root)
    from fincon.workflow import trials

    row = trials.row(config_hash="c", strategy="sma-cross", tickers=["TSLA"], start="2022-10-05", end="2022-11-01",
                     values=[100.0, 101.0, 100.5], metrics={"cr_pct": 0.5, "sharpe": 1.0})  # fmt: skip
    trials.append(root / "ledger.sqlite", [row])
    f["ledger"] = str(root / "ledger.sqlite")
    bad = root / "bad_manifest"  # a folder whose run_manifest.json is not fincon's
    bad.mkdir()
    (bad / "run_manifest.json").write_text('{"mine": 1}\n')
    (bad / "notes.txt").write_text("mine\n")
    f["bad_manifest"] = str(bad)
    training = root / "training"
    training.mkdir()
    (training / "train.json").write_text('{"status": "complete"}\n')
    f["training"] = str(training)
    return f


def _unnamed_dataset(root: Path) -> str:
    """A dataset of a ticker fincon has no name for (``data import csv``)."""
    prices = root / "prices"
    prices.mkdir()
    days = pd.bdate_range("2022-01-03", "2022-12-30")
    rows = [f"{d.date()},10,11,9,{10 + (i % 7) / 10},{10 + (i % 7) / 10},1000" for i, d in enumerate(days)]
    (prices / "ZZZQ.csv").write_text("Date,Open,High,Low,Close,Adj Close,Volume\n" + "\n".join(rows) + "\n")
    news = root / "news.csv"
    news.write_text("ticker,published,source,title,text,url\nZZZQ,2022-03-01,news,t,the firm beat estimates.,\n")
    out = root / "unnamed"
    assert main(["data", "import", "csv", str(news), "--prices", str(prices), "--out", str(out)]) == 0
    return str(out)


#: a simulated journal of TSLA from 2022-10-05, into the fixtures' fresh run folder
FORWARD_INIT = ["forward", "init", "{run}", "--ticker", "TSLA", "--simulate-from", "2022-10-05"]

# id -> (argv with {fixture} placeholders, a fragment the one line must contain)
CASES: dict[str, tuple[list[str], str]] = {
    # found in review: checked on the team's first day, a typo wrote a partial run and exited 3
    "a debate source that is none": (
        [*TEAM, "--protocol", "debate", "--param", "fincon.debate_sources=[foo]", "--out", "{run}"],
        "unknown source 'foo'; a debate reads news, 10-K, 10-Q, analyst_note, earnings_call",
    ),
    # found in review: a journal's folder that is a file, or under one, was a NotADirectoryError traceback
    "forward init into a file of the user's": (
        ["forward", "init", "{notes}", "--strategy", "buy-and-hold", "--simulate-from", "2022-10-05"],
        "{notes} is a file; a forward journal starts in a new folder",
    ),
    "forward init under a file of the user's": (
        ["forward", "init", "{notes}/j", "--strategy", "buy-and-hold", "--simulate-from", "2022-10-05"],
        "{notes} is a file; a forward journal starts in a new folder",
    ),
    # found in review: a ticker was a path: prices read from outside --data, the run written outside runs/
    "backtest a ticker that is a path": (
        ["backtest", "--ticker", "SUB/../../ESC", "--strategy", "buy-and-hold"],
        "ticker 'SUB/../../ESC' is not a symbol (letters, digits and . - ^ = _ only)",
    ),
    "team candidates with a space": ([*TEAM, "--candidates", "TSLA,A B"], "ticker 'A B' is not a symbol"),
    # found in review: samples beside a protocol that samples nothing ran byte-identical to a run without it
    "backtest --samples beside the fincon protocol": (
        [*TEAM, "--samples", "5", "--out", "{run}"],
        "samples is scm's (its Strategist's proposals a day); protocol fincon samples none",
    ),
    "--param fincon.samples beside the fincon protocol": (
        [*TEAM, "--param", "fincon.samples=5", "--out", "{run}"],
        "samples is scm's (its Strategist's proposals a day); protocol fincon samples none",
    ),
    "--samples beside no team": (
        ["backtest", "--ticker", "TSLA", "--strategy", "buy-and-hold", "--samples", "3", "--out", "{run}"],
        "--samples applies to the agent team; add fincon to --strategy",
    ),
    "forward init --samples beside the debate protocol": (
        [
            "forward",
            "init",
            "{run}",
            *TEAM[3:],
            "--protocol",
            "debate",
            "--samples",
            "5",
            "--simulate-from",
            "2022-10-05",
        ],
        "protocol debate samples none",
    ),
    # 9. data loss: a file fincon did not write is never replaced or altered
    "eval numeric --out over the user's notes": (
        [*NUMERIC, "--out", "{notes}"],
        "--out {notes} exists and is not a file fincon wrote; nothing was written",
    ),
    "eval numeric --out over a JSON file of the user's": (
        [*NUMERIC, "--out", "{mine_json}"],
        "is not a file fincon wrote",
    ),
    "eval debate --out over the user's notes": (
        ["eval", "debate", "--brain", "rules", "--tickers", "TSLA", "--out", "{notes}"],
        "is not a file fincon wrote",
    ),
    "eval extraction --out over the user's notes": (
        ["eval", "extraction", "--dataset", "{run}", "--out", "{notes}"],
        "is not a file fincon wrote",
    ),
    "eval lookahead --out over the user's notes": (
        ["eval", "lookahead", "--ticker", "TSLA", "--start", "2022-10-05", "--end", "2022-10-20", "--out", "{notes}"],
        "is not a file fincon wrote",
    ),
    "plot --out over a PNG of the user's": (
        ["plot", "{run}", "--out", "{own_png}"],
        "run does not exist",  # the runs are read first; the PNG below with a real run
    ),
    "--ledger on the user's own SQLite database": (
        [*SMA, "--ledger", "{users_db}", "--out", "{run}"],
        "--ledger {users_db} is not a fincon trial ledger (it holds tables fincon did not write (notes))",
    ),
    "--llm-cache-path on the user's own SQLite database": (
        [*ASK, "{users_db}"],
        "is not an LLM call cache (it holds tables fincon did not write (notes))",
    ),
    "--llm-cache-path on a database whose calls table is not fincon's": (
        [*ASK, "{foreign_calls}"],
        "its calls table lacks fincon's columns",
    ),
    # 10. a ledger that is not one is refused before the work
    "--ledger on a text file": ([*SMA, "--ledger", "{notes}", "--out", "{run}"], "(it is not a SQLite file)"),
    "--ledger on a corrupt SQLite file": (
        [*SMA, "--ledger", "{corrupt}", "--out", "{run}"],
        "is not a fincon trial ledger (it is not a readable SQLite database",
    ),
    "--ledger on a foreign trials table": (
        [*SMA, "--ledger", "{foreign_trials}", "--out", "{run}"],
        "its trials table lacks fincon's columns",
    ),
    "experiment --ledger on a text file leaves no folder": (
        [*EXP, "--ledger", "{notes}", "--out", "{run}"],
        "--ledger {notes} is not a fincon trial ledger",
    ),
    "ledger --ledger on the user's database": (["ledger", "--ledger", "{users_db}"], "is not a fincon trial ledger"),
    # 12. masking that says it masked
    "--anonymize on a firm fincon has no name for": (
        [
            "backtest",
            "--data",
            "{unnamed}",
            "--ticker",
            "ZZZQ",
            "--strategy",
            "finsent",
            "--anonymize",
            *SERVER,
            "--start",
            "2022-06-01",
            "--end",
            "2022-06-30",
            "--no-progress",
            "--out",
            "{run}",
        ],
        "--anonymize: fincon knows no name for ZZZQ (not in its table, the dataset names none, and its items",
    ),  # fmt: skip
    "--alias for a ticker the run does not trade": (
        [
            "backtest",
            "--ticker",
            "TSLA",
            "--strategy",
            "llm-trader",
            "--anonymize",
            "--alias",
            "MSFT=Microsoft",
            *SERVER,
            "--start",
            "2022-06-01",
            "--end",
            "2022-06-30",
            "--no-progress",
            "--out",
            "{run}",
        ],
        "--alias MSFT=...: MSFT is not traded in this run (tickers: TSLA)",
    ),  # fmt: skip
    # 14. the cutoff guard is not defeated by a flag
    "--llm-knowledge-cutoff earlier than the known one, with --require-after-cutoff": (
        [
            "backtest",
            "--ticker",
            "TSLA",
            "--strategy",
            "llm-trader",
            "--llm-backend",
            "openai",
            "--llm-model",
            "gpt-4o",
            "--llm-base-url",
            "http://127.0.0.1:9/v1",
            "--llm-knowledge-cutoff",
            "2022-01-01",
            "--require-after-cutoff",
            "--start",
            "2022-10-03",
            "--end",
            "2022-10-31",
            "--no-progress",
            "--out",
            "{run}",
        ],
        "--require-after-cutoff: llm-trader (--llm-knowledge-cutoff 2022-01-01 is earlier than the known cutoff "
        "2023-10-31",
    ),  # fmt: skip
    # 15. vacuous flags
    "experiment --placebo ''": ([*EXP, "--placebo", "", "--out", "{run}"], "--placebo is empty: name one or more of"),
    "experiment --ablations ','": ([*EXP, "--ablations", ",", "--out", "{run}"], "--ablations is empty"),
    "backtest --strategy ''": (["backtest", "--strategy", "", "--out", "{run}"], "--strategy is empty"),
    "report --card --out writes nothing": (
        ["report", "--card", "{training}", "--out", "{run}.html"],
        "--card prints the card (--json: as JSON) and writes no file",
    ),
    "--param a2c.train_end inside the test window": (
        [
            "backtest",
            "--ticker",
            "TSLA",
            "--strategy",
            "a2c",
            "--param",
            "a2c.train_end=2022-11-01",
            "--start",
            "2022-10-05",
            "--end",
            "2022-10-20",
            "--no-progress",
            "--out",
            "{run}",
        ],
        "--param a2c.train_end=2022-11-01 is inside the test window (it starts 2022-10-05)",
    ),  # fmt: skip
    "ledger --study ''": (["ledger", "--ledger", "{ledger}", "--study", ""], "--study '': give TICKERS START..END"),
    "ledger --study reversed": (  # found in review: accepted, the family of a window ending before it starts
        ["ledger", "--ledger", "{ledger}", "--study", "TSLA 2022-10-20..2022-10-05"],
        "--study 'TSLA 2022-10-20..2022-10-05': 2022-10-20 is after 2022-10-05; give START..END, the earlier day first",
    ),
    "ledger --study impossible day": (
        ["ledger", "--ledger", "{ledger}", "--study", "TSLA 2022-10-05..2022-13-45"],
        "--study '2022-13-45' is not a calendar date (YYYY-MM-DD)",
    ),
    # 16. misleading no more
    "--brain rules on strategies without a brain": (
        [*SMA, "--brain", "rules", "--out", "{run}"],
        "--brain applies to fincon, finsent, finmem; none of them is in --strategy",
    ),
    "--param a2c.bogus names the flag and the valid keys": (
        ["backtest", "--ticker", "TSLA", "--strategy", "a2c", "--param", "a2c.bogus=1", "--out", "{run}"],
        "unknown key '--param a2c.bogus' (valid: model_cache, seed, size, timesteps, train_end, train_start)",
    ),
    "--param with a list written as text says how to write a list": (  # found by hand: analysts=news,filings
        [*SMA[:4], "fincon", *SMA[6:], "--param", "fincon.analysts=news,filings", "--out", "{run}"],
        "--param fincon.analysts: Input should be a valid list (values are read as YAML: write a list in "
        "brackets, [news,filings])",
    ),
    "--placebo bogus lists the placebos": (
        [*EXP, "--placebo", "bogus", "--out", "{run}"],
        "--placebo bogus: not one of shuffle-news, flip-tone, price-twin",
    ),
    "--ledger ''": ([*SMA, "--ledger", "", "--out", "{run}"], "--ledger is empty; give a file"),
    "--replace over a folder whose run_manifest.json is not fincon's": (
        [*SMA, "--out", "{bad_manifest}", "--replace"],
        "its run_manifest.json is not one fincon wrote",
    ),
    "report --card on a training": (["report", "--card", "{training}"], "is a belief training (train.json)"),
    # forward journals (issue 44 item 7)
    "forward init into a folder of the user's": (
        ["forward", "init", "{bad_manifest}", "--ticker", "TSLA", "--simulate-from", "2022-10-05"],
        "is not empty; a forward journal starts in a new folder (nothing was changed)",
    ),
    "forward step on a folder that holds no journal": (["forward", "step", "{training}"], "no forward journal here"),
    "forward verify on a folder that holds no journal": (["forward", "verify", "{training}"], "no forward journal"),
    "forward init --fill close": (
        [*FORWARD_INIT, "--fill", "close"],
        "--fill close: a forward journal decides after the close and fills at the next open",
    ),
    "forward init --simulate-from a Saturday": (
        ["forward", "init", "{run}", "--ticker", "TSLA", "--simulate-from", "2022-10-08"],
        "--simulate-from 2022-10-08 is no session of XNYS",
    ),
    "forward init --ledger on the user's database": (
        [*FORWARD_INIT, "--ledger", "{users_db}"],
        "--ledger {users_db} is not a fincon trial ledger (it holds tables fincon did not write (notes))",
    ),
    "forward init --ledger on a directory": (
        [*FORWARD_INIT, "--ledger", "{training}"],
        "is a directory; give a file such as",
    ),
    "forward init live on data that ended years ago": (
        ["forward", "init", "{run}", "--ticker", "TSLA"],
        "a live journal reads a live source (--source yfinance); the sample data ends in the past",
    ),
    # a strategy that cannot start on the plan is refused before the registration is sealed (each step failed)
    "forward init of a sentiment journal on a corpus without tags": (
        [*FORWARD_INIT, "--strategy", "buy-and-hold,sentiment"],
        "sentiment baseline: the event corpus has no sentiment-tagged news for TSLA",
    ),
    "forward init of finsent on a ticker its corpus has no item of": (
        [
            "forward",
            "init",
            "{run}",
            "--ticker",
            "JNJ",
            "--simulate-from",
            "2022-10-05",
            "--strategy",
            "finsent",
            "--param",
            "finsent.brain=rules",
        ],  # fmt: skip
        "finsent: the corpus 'sample' has no items for JNJ",
    ),
    "forward init of a2c on two tickers": (
        ["forward", "init", "{run}", "--ticker", "TSLA,MSFT", "--simulate-from", "2022-10-05", "--strategy", "a2c"],
        "a2c trades one stock (the paper's single-stock task); give one --ticker",
    ),
    "forward init of ppo trained past its first session": (
        [*FORWARD_INIT, "--strategy", "ppo", "--param", "ppo.train_end=2022-12-01"],
        "--param ppo.train_end=2022-12-01 is inside the test window (it starts 2022-10-05)",
    ),
    "forward init of finrl-a2c trained past its first session": (
        [*FORWARD_INIT, "--strategy", "finrl-a2c", "--param", "finrl-a2c.train_end=2022-10-05"],
        "--param finrl-a2c.train_end=2022-10-05 is inside the test window (it starts 2022-10-05)",
    ),
    "forward init of markowitz with a direction for a ticker it does not trade": (
        [
            "forward",
            "init",
            "{run}",
            "--ticker",
            "TSLA,MSFT",
            "--simulate-from",
            "2022-10-05",
            "--strategy",
            "markowitz",
            "--param",
            "markowitz.form=signed",
            "--param",
            'markowitz.directions={{"AAPL": "buy"}}',
        ],  # fmt: skip
        "strategy_params.markowitz.directions names AAPL, not among this run's tickers (TSLA, MSFT)",
    ),
    # found in review: directions beside the long-only form were dropped without a word (MSFT held long
    # under {MSFT: sell}, config.yaml naming the sell)
    "markowitz directions without the signed form": (
        [*SMA[:4], "markowitz", "--param", "markowitz.directions={{TSLA: sell}}", "--out", "{run}"],
        "directions are read by form: signed only (long_only holds every asset long): set form: signed",
    ),
    # 17. a server that is down is found before the experiment's folder is made
    "experiment --brain llm with the server down": (
        [
            "experiment",
            "--ticker",
            "TSLA",
            "--brain",
            "llm",
            *SERVER,
            "--repeats",
            "1",
            "--episodes",
            "1",
            "--ablations",
            "full",
            "--train-start",
            "2022-09-01",
            "--train-end",
            "2022-09-15",
            "--test-start",
            "2022-09-16",
            "--test-end",
            "2022-09-30",
            "--no-progress",
            "--ledger",
            "off",
            "--out",
            "{run}",
        ],
        "nothing is listening at http://127.0.0.1:9/v1",
    ),  # fmt: skip
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_gets_one_line_and_exit_2(case, tmp_path, monkeypatch, capfd):
    argv, fragment = CASES[case]
    fragment = fragment.replace("{notes}", str(tmp_path / "fx" / "notes.txt"))
    fragment = fragment.replace("{users_db}", str(tmp_path / "fx" / "mine.db"))
    check_case(main, fixtures, argv, fragment, tmp_path, monkeypatch, capfd)


@pytest.mark.slow  # 1.5-4.6 s on 2 cores: in make test, not in make test-fast (under a minute)
def test_an_eval_replaces_its_own_json_and_plot_its_own_png(tmp_path, monkeypatch, capfd):
    """What fincon wrote it may write again; a PNG of the user's at --out is refused (exit 2, untouched)."""
    monkeypatch.chdir(tmp_path)
    assert main([*NUMERIC, "--out", "out.json"]) == 0
    assert main([*NUMERIC, "--out", "out.json"]) == 0  # its own earlier result
    assert '"generator": "fincon eval numeric"' in (tmp_path / "out.json").read_text()
    assert main([*SMA, "--ledger", "off", "--out", "run"]) == 0
    own = tmp_path / "mine.png"
    own.write_bytes(b"\x89PNG\r\n\x1a\n my own picture")
    capfd.readouterr()
    assert main(["plot", "run", "--out", "mine.png"]) == 2
    assert "--out mine.png exists and is not a plot fincon wrote" in capfd.readouterr().err
    assert own.read_bytes() == b"\x89PNG\r\n\x1a\n my own picture"
    assert main(["plot", "run", "--out", "cmp.png"]) == 0
    assert main(["plot", "run", "--out", "cmp.png"]) == 0  # its own plot, replaced


def test_a_ledger_env_variable_that_is_a_folder_is_named_as_such(tmp_path, monkeypatch, capfd):
    """Issue 42 item 16: $FINCON_LEDGER pointing at a folder names the variable, not a --ledger never given."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FINCON_LEDGER", str(tmp_path))
    assert main([*SMA, "--out", "run"]) == 2
    err = capfd.readouterr().err
    assert f"FINCON_LEDGER {tmp_path} is a directory" in err and "--ledger" not in err.split("is a directory")[0]
    assert not (tmp_path / "run").exists()


def test_flags_no_model_reads_are_said_not_dropped(tmp_path, monkeypatch, capfd):
    """Issue 42 item 15: on a run without a model, --require-after-cutoff, --llm-knowledge-cutoff,
    --anonymize and --alias work (exit 0) and one warning says they change nothing."""
    monkeypatch.chdir(tmp_path)
    argv = [*SMA, "--require-after-cutoff", "--llm-knowledge-cutoff", "2020-01-01", "--anonymize",
            "--alias", "TSLA=Tesla", "--ledger", "off", "--out", "run"]  # fmt: skip
    assert main(argv) == 0
    err = capfd.readouterr().err
    assert (
        "fincon: warning: --anonymize, --alias, --llm-knowledge-cutoff, --require-after-cutoff: no strategy of "
        "this run calls a model, so they change nothing here" in err
    )


@pytest.mark.slow  # 1.5-4.6 s on 2 cores: in make test, not in make test-fast (under a minute)
def test_every_model_setting_a_run_without_a_model_ignores_is_said(tmp_path, monkeypatch, capfd):
    """--llm-model, --max-tokens or an llm: key of the config on a run without a model were dropped in
    silence (found by hand: `--strategy sma-cross --llm-model ...`); the warning names each, as it is
    spelled (its flag, or its config key when it has none), and the run's results are the same."""
    monkeypatch.chdir(tmp_path)
    assert main([*SMA, "--ledger", "off", "--out", "plain"]) == 0
    assert "calls a model" not in capfd.readouterr().err  # nothing given, nothing said
    argv = [*SMA, "--llm-model", "qwen2.5-coder-0.5b", "--max-tokens", "500", "--llm-temperature", "0.3",
            "--ledger", "off", "--out", "flags"]  # fmt: skip
    assert main(argv) == 0
    assert (
        "fincon: warning: --llm-model, --max-tokens, --llm-temperature: no strategy of this run calls a model, "
        "so they change nothing here" in capfd.readouterr().err
    )
    assert (tmp_path / "flags" / "equity.csv").read_bytes() == (tmp_path / "plain" / "equity.csv").read_bytes()
    # the broker's --charge-llm charges a model's spend: with no model it charged nothing, in silence
    assert main([*SMA, "--charge-llm", "--ledger", "off", "--out", "charge"]) == 0
    assert (
        "fincon: warning: --charge-llm: no strategy of this run calls a model, so it changes nothing here"
        in capfd.readouterr().err
    )
    charged = [line.rsplit(",", 1) for line in (tmp_path / "charge" / "equity.csv").read_text().splitlines()]
    assert [c[0] for c in charged] == (tmp_path / "plain" / "equity.csv").read_text().splitlines()  # the values
    assert {c[1] for c in charged[1:]} == {"0.000000"}  # and nothing charged
    (tmp_path / "llm.yaml").write_text("llm: {answer_max_tokens: 100}\n")
    assert main([*SMA, "--config", "llm.yaml", "--ledger", "off", "--out", "config"]) == 0
    assert "fincon: warning: llm.answer_max_tokens: no strategy of this run calls a model, so it changes" in (
        capfd.readouterr().err
    )


def test_an_evaluation_on_the_rules_brain_names_the_model_flags_it_ignores(capfd):
    """`fincon eval numeric --brain rules --llm-model X` dropped the model flags in silence (found by hand)."""
    assert main(["eval", "numeric", "--brain", "rules", "--limit", "3", "--llm-model", "qwen2.5-coder-0.5b"]) == 0
    err = capfd.readouterr().err
    assert "fincon: warning: --llm-model: the rules brain calls no model, so it changes nothing here" in err
    assert main(["eval", "numeric", "--brain", "rules", "--limit", "3"]) == 0
    assert "warning" not in capfd.readouterr().err


def test_charging_a_model_the_price_table_does_not_price_is_said(tmp_path, monkeypatch, capfd):
    """--charge-llm with no price for the model charged $0 and the card passed "LLM cost as cost" (found by
    hand: the team on the OpenAI path, 32 calls, 3,840 tokens, $0.00 taken): a warning names the row
    the price table lacks (an in-process GGUF's is ``local``), and none is said once it is priced."""
    monkeypatch.chdir(tmp_path)
    team = ["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--start", "2022-10-05", "--end",
            "2022-10-12", "--charge-llm", "--llm-cache", "replay", "--llm-cache-path", "none.sqlite",
            "--ledger", "off", "--no-progress"]  # fmt: skip
    main([*team, "--out", "local"])  # the replay has no recording: the run stops, the warning came first
    assert (
        "fincon: warning: --charge-llm: the price table has no row for fincon's model (local), so its calls are "
        "charged $0 (--llm-prices FILE, USD per million tokens)" in capfd.readouterr().err
    )
    (tmp_path / "prices.yaml").write_text("gpt-x: {input_per_million: 0.15, output_per_million: 0.6}\n")
    openai = ["--llm-backend", "openai", "--llm-model", "gpt-x", "--llm-knowledge-cutoff", "2019-01-01"]
    main([*team, *openai, "--llm-prices", "prices.yaml", "--out", "priced"])
    assert "charged $0" not in capfd.readouterr().err
    main([*team, *openai[:3], "gpt-y", *openai[4:], "--llm-prices", "prices.yaml", "--out", "other"])
    assert "fincon's model (gpt-y), so its calls are charged $0" in capfd.readouterr().err


@pytest.mark.slow  # 1.5-4.6 s on 2 cores: in make test, not in make test-fast (under a minute)
def test_a_setting_of_the_other_brain_is_said(tmp_path, monkeypatch, capfd):
    """An experiment's --temperature samples the llm brain's manager and --explore noises the rules
    brain's weights: given to the other brain they were dropped in silence (found by hand)."""
    from fincon.workflow.model_checks import warn_other_brain

    monkeypatch.chdir(tmp_path)
    argv = ["experiment", "--brain", "rules", "--repeats", "1", "--episodes", "1", "--ablations", "full",
            "--baselines", "buy-and-hold", "--train-start", "2022-06-01", "--train-end", "2022-06-30",
            "--test-start", "2022-07-01", "--test-end", "2022-07-29", "--no-progress", "--ledger", "off",
            "--bootstrap-reps", "1000", "--temperature", "0.2", "--charge-llm", "--out", "exp"]  # fmt: skip
    assert main(argv) == 0
    err = capfd.readouterr().err
    assert "fincon: warning: --temperature: a setting of the other brain; with the rules brain it changes nothing " \
        "here" in err  # fmt: skip
    # and the broker's --charge-llm, said by a backtest, went unsaid by an experiment (found by hand)
    assert "fincon: warning: --charge-llm: no strategy of this run calls a model, so it changes nothing here" in err
    assert "beliefs move only between two episodes" not in err  # one episode, but no no-beliefs row to equal
    # a training on the llm brain given --explore: said before its first file (here a replay without a recording
    # stops it next, so no model is loaded)
    argv = ["train", "--ticker", "TSLA", "--brain", "llm", "--explore", "0.5", "--episodes", "1", "--llm-cache",
            "replay", "--llm-cache-path", "none.sqlite", "--no-progress", "--out", "tr"]  # fmt: skip
    assert main(argv) == 2 and not (tmp_path / "tr").exists()
    assert "fincon: warning: --explore: a setting of the other brain; with the llm brain it changes nothing here" in (
        capfd.readouterr().err
    )
    # its default given by hand is given all the same (it was not told from none)
    argv[argv.index("--explore") + 1] = "0.3"
    assert main(argv) == 2 and "fincon: warning: --explore: a setting of the other brain" in capfd.readouterr().err
    warn_other_brain("llm", {"explore", "temperature", "seed"})
    assert capfd.readouterr().err == (
        "fincon: warning: --explore: a setting of the other brain; with the llm brain it changes nothing here\n"
    )
    warn_other_brain("rules", {"explore", "seed"})  # its own settings: nothing said
    assert capfd.readouterr().err == ""


def test_an_experiment_says_an_overridden_temperature_and_a_missing_recording_before_its_folder(
    tmp_path, monkeypatch, capfd
):
    """--temperature beside --llm-temperature above 0 changed nothing (the configured temperature samples the
    manager) and was not said; a replay without its recording ran and kept the baselines, then failed on the
    team's first call (both found by hand)."""
    monkeypatch.chdir(tmp_path)
    argv = ["experiment", "--brain", "llm", "--repeats", "1", "--episodes", "1", "--ablations", "full",
            "--baselines", "buy-and-hold", "--train-start", "2022-06-01", "--train-end", "2022-06-30",
            "--test-start", "2022-07-01", "--test-end", "2022-07-29", "--no-progress", "--ledger", "off",
            "--llm-cache", "replay", "--llm-cache-path", "none.sqlite", "--out", "exp"]  # fmt: skip
    assert main([*argv, "--temperature", "0.5", "--llm-temperature", "0.3"]) == 2
    err = capfd.readouterr().err
    assert (
        "fincon: warning: --temperature 0.5: the manager samples at the configured LLM temperature 0.3 "
        "(--llm-temperature); --temperature changes nothing here\n" in err
    )
    assert err.endswith(  # the path given saved absolute (config.yaml reads the same cache from any folder)
        f"fincon: error: replay needs a recorded cache, but {Path.cwd() / 'none.sqlite'} does not exist; record a "
        "run in read-write mode first\n"
    )
    assert list(tmp_path.iterdir()) == []
    assert main([*argv, "--temperature", "0.5"]) == 2  # the manager's temperature: nothing to say
    assert "--temperature" not in capfd.readouterr().err


def test_results_json_holds_no_bare_nan_and_a_flat_baseline_is_never_best():
    """Issue 42 item 16: results are JSON (a non-finite number is null), and the significance table's best
    non-LLM baseline is the results table's (a book that never moved has no Sharpe ratio)."""
    import json
    import math

    import numpy as np

    from fincon.files import json_text
    from fincon.workflow.rolling_stats import universe_statistics

    text = json_text({"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": -math.inf}})
    assert json.loads(text) == {"a": None, "b": [1.0, None], "c": {"d": None}} and "NaN" not in text
    rng = np.random.default_rng(0)
    series = {"fincon-full": rng.normal(-0.001, 0.01, 60), "buy-and-hold": rng.normal(-0.002, 0.01, 60),
              "sma-cross": np.zeros(60)}  # fmt: skip
    _, extra = universe_statistics("u", series, None, reps=200, splits=4, seed=0)
    assert extra["best_non_llm_baseline"] == "buy-and-hold"


def test_one_training_episode_beside_the_no_beliefs_ablation_is_said(capfd):
    """A rolling evaluation with --episodes 1 printed "fincon" and "fincon no-beliefs" with the same figures
    in every column, and nothing said why: one episode never moves the beliefs (CVRF steps between two)."""
    from fincon.workflow.experiment import warn_one_episode
    from fincon.workflow.experiment_config import ExperimentConfig

    warn_one_episode(ExperimentConfig(episodes=1, ablations=["full", "no-cvar", "no-beliefs"]))
    assert capfd.readouterr().err == (
        "fincon: warning: --episodes 1: the beliefs move only between two episodes, so no training here moves "
        "them and no-beliefs is the full team run again (give --episodes 2 or more)\n"
    )
    for quiet in (ExperimentConfig(episodes=2), ExperimentConfig(episodes=1, ablations=["no-cvar", "no-beliefs"])):
        warn_one_episode(quiet)
        assert capfd.readouterr().err == ""


@pytest.mark.slow  # three trainings, 5 s on 2 cores: in make test, not in make test-fast
def test_a_training_whose_beliefs_never_moved_says_why(tmp_path, monkeypatch, capsys):
    """`fincon train --episodes 1` printed "learned beliefs: ... (version 0)", as if something was learned."""
    monkeypatch.chdir(tmp_path)
    tiny = ["train", "--brain", "rules", "--start", "2022-03-01", "--end", "2022-03-10", "--no-progress"]
    assert main([*tiny, "--episodes", "1", "--out", "one"]) == 0
    assert "(version 0: the initial ones; one episode never moves them, CVRF compares two: --episodes 2 or " \
        "more)\n" in capsys.readouterr().out  # fmt: skip
    assert main([*tiny, "--episodes", "2", "--no-beliefs", "--out", "none"]) == 0
    assert "(version 0: the initial ones, no update ran)\n" in capsys.readouterr().out
    assert main([*tiny, "--episodes", "2", "--out", "two"]) == 0
    assert "beliefs.json  (version 1)\n" in capsys.readouterr().out


@pytest.mark.slow
def test_an_out_that_would_hold_the_models_call_cache_is_refused_before_anything_is_made(tmp_path, monkeypatch, capsys):
    """`--out runs`, a user's first run of a strategy with a model: the call cache's default path is
    runs/.cache/llm.sqlite, made before the run is written, so the run found its own folder taken and
    went to runs-2 ("fincon: runs already exists; this run was written to runs-2", of a folder the user
    never had). Refused in one line naming both ways out; nothing is made, no model asked. A folder of
    its own, or the cache elsewhere, runs."""
    monkeypatch.chdir(tmp_path)
    common = ["backtest", "--ticker", "TSLA", "--strategy", "finsent", "--brain", "llm", "--llm-backend", "openai",
              "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "stub", "--llm-knowledge-cutoff", "2019-01-01",
              "--start", "2022-10-05", "--end", "2022-10-12", "--no-progress", "--ledger", "off"]  # fmt: skip
    assert main([*common, "--out", "runs"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "fincon: error: --out runs would hold the model's call cache (runs/.cache/llm.sqlite, the default "
        "--llm-cache-path), made before the run is written, so the run could not take its name: give the run a "
        "folder of its own (--out runs/NAME) or the cache another path (--llm-cache-path FILE)"
    ]
    assert list(tmp_path.iterdir()) == []
    from fincon.testing.doubles import TeamStub
    from fincon.testing.server import DoubleServer

    with DoubleServer(TeamStub()) as url:
        common[common.index("http://127.0.0.1:9/v1")] = url
        assert main([*common, "--out", "runs/finsent"]) == 0
        assert main([*common, "--out", "mine", "--llm-cache-path", "calls.sqlite"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calls.sqlite", "mine", "runs"]
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [".cache", "finsent"]


@pytest.mark.slow
def test_a_trainings_own_config_says_the_options_it_ran_with(tmp_path, monkeypatch, capfd):
    """Found in review: a training's config.yaml holds its episodes' run config, not its options (train.json
    does); `fincon train --config DIR/config.yaml` trained 4 episodes where it ran 2, other beliefs, unsaid."""
    monkeypatch.chdir(tmp_path)
    argv = ["train", "--ticker", "TSLA", "--brain", "rules", "--start", "2022-11-01", "--end", "2022-11-08",
            "--param", "fincon.transcripts=text", "--no-progress"]  # fmt: skip
    assert main([*argv, "--episodes", "2", "--explore", "0.2", "--out", "t1"]) == 0
    capfd.readouterr()
    assert main(["train", "--config", "t1/config.yaml", "--episodes", "2", "--no-progress", "--out", "t2"]) == 0
    err = capfd.readouterr().err
    assert "t1/config.yaml is the config of a training that ran --explore 0.2 (t1/train.json)" in err, err
    assert main(["train", "--config", "t1/config.yaml", "--episodes", "2", "--explore", "0.2", "--no-progress",
                 "--out", "t3"]) == 0  # fmt: skip
    assert "is the config of a training" not in capfd.readouterr().err
