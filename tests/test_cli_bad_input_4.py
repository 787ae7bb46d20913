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

import pytest

from fincon.cli.main import main
from fincon.testing.badinput import check_case

SMA = ["backtest", "--ticker", "TSLA", "--strategy", "sma-cross", "--no-progress", "--start", "2022-10-05",
       "--end", "2022-11-01"]  # fmt: skip
EXP = ["experiment", "--ticker", "TSLA", "--brain", "rules", "--no-progress", "--repeats", "1", "--episodes", "1",
       "--train-start", "2022-04-01", "--train-end", "2022-04-08", "--test-start", "2022-05-02",
       "--test-end", "2022-05-10"]  # fmt: skip
NUMERIC = ["eval", "numeric", "--brain", "rules", "--limit", "3"]
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
    return f


# id -> (argv with {fixture} placeholders, a fragment the one line must contain)
CASES: dict[str, tuple[list[str], str]] = {
    # 9. data loss: a file fincon did not write is never replaced or altered
    "eval numeric --json over the user's notes": (
        [*NUMERIC, "--json", "{notes}"],
        "--json {notes} exists and is not a file fincon wrote; nothing was written",
    ),
    "eval numeric --json over a JSON file of the user's": (
        [*NUMERIC, "--json", "{mine_json}"],
        "is not a file fincon wrote",
    ),
    "eval debate --json over the user's notes": (
        ["eval", "debate", "--brain", "rules", "--tickers", "TSLA", "--json", "{notes}"],
        "is not a file fincon wrote",
    ),
    "eval extraction --json over the user's notes": (
        ["eval", "extraction", "--dataset", "{run}", "--json", "{notes}"],
        "is not a file fincon wrote",
    ),
    "eval lookahead --json over the user's notes": (
        ["eval", "lookahead", "--ticker", "TSLA", "--start", "2022-10-05", "--end", "2022-10-20", "--json", "{notes}"],
        "is not a file fincon wrote",
    ),
    "plot --out over a PNG of the user's": (
        ["plot", "{run}", "--out", "{own_png}"],
        "not a run directory",  # the runs are read first; the PNG below with a real run
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
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_gets_one_line_and_exit_2(case, tmp_path, monkeypatch, capfd):
    argv, fragment = CASES[case]
    fragment = fragment.replace("{notes}", str(tmp_path / "fx" / "notes.txt"))
    fragment = fragment.replace("{users_db}", str(tmp_path / "fx" / "mine.db"))
    check_case(main, fixtures, argv, fragment, tmp_path, monkeypatch, capfd)


def test_an_eval_replaces_its_own_json_and_plot_its_own_png(tmp_path, monkeypatch, capfd):
    """What fincon wrote it may write again; a PNG of the user's at --out is refused (exit 2, untouched)."""
    monkeypatch.chdir(tmp_path)
    assert main([*NUMERIC, "--json", "out.json"]) == 0
    assert main([*NUMERIC, "--json", "out.json"]) == 0  # its own earlier result
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
