"""The bad-input harness: one command a user could type, checked for the
one-line error, exit 2 and an untouched folder.

Shared by the rounds of bad-input tables (``tests/test_cli_bad_input*.py``)
so none of them imports another test file.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
from pathlib import Path
from typing import Callable, Sequence

#: the bundled sample corpus (prices and events)
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def tree(root: Path) -> dict[str, float]:
    """Every path under ``root`` with its file's modification time (0 for a folder)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = p.stat().st_mtime_ns if p.is_file() else 0
    return out


def run_cli(main: Callable[[list[str]], int], argv: Sequence[str]) -> int:
    """``fincon ARGV``'s exit code (argparse's own errors included); ``main``
    is ``fincon.cli.main.main`` (handed in: the test kit sits beside the CLI
    and does not import it)."""
    try:
        return main(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)


def captured(main: Callable[[list[str]], int], argv: Sequence[str]) -> tuple[int, str, str]:
    """``fincon ARGV`` run in this process: its exit code, stdout and stderr."""

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def check_case(main, fixtures, argv, fragment, tmp_path: Path, monkeypatch, capfd) -> tuple[str, str]:
    """One row of a bad-input table: build ``fixtures(tmp_path/"fx")``, run
    ``fincon ARGV`` (its ``{fixture}`` placeholders filled) in an empty
    working folder with its own home and no cache variable, and check the one
    line, exit 2, and that no file under ``tmp_path`` changed, byte for byte."""
    fix = fixtures(tmp_path / "fx")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no user cache is touched either
    monkeypatch.delenv("FINCON_CACHE_DIR", raising=False)
    argv = [a.format(**fix) for a in argv]
    before = tree(tmp_path)
    contents = {p: p.read_bytes() for p in (tmp_path / "fx").rglob("*") if p.is_file()}
    code = run_cli(main, argv)
    out, err = capfd.readouterr()
    assert_one_line_error(code, out, err, fragment)
    after = tree(tmp_path)
    assert after == before, sorted(set(after) ^ set(before))
    assert {p: p.read_bytes() for p in contents} == contents  # every file of the user's, byte for byte
    return out, err


def assert_one_line_error(code: int, out: str, err: str, fragment: str) -> str:
    """Exit 2 and exactly one ``fincon: error: ...`` line holding ``fragment``; the line."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (code, err)
    assert len(lines) == 1, err
    assert lines[0].startswith("fincon: error: "), err
    assert fragment in lines[0], lines[0]
    return lines[0]


def _csv_dir(root: Path, name: str, edit) -> str:
    """A --data directory holding a TSLA.csv derived from the sample by ``edit``."""
    d = root / name
    d.mkdir()
    lines = gzip.decompress((SAMPLE / "prices" / "TSLA.csv.gz").read_bytes()).decode().splitlines()
    (d / "TSLA.csv").write_text("\n".join(edit(lines)) + "\n")
    return str(d)


def _set_field(lines, row, col, value):
    out = list(lines)
    cells = out[row].split(",")
    cells[col] = value
    out[row] = ",".join(cells)
    return out


def _day_first(lines):
    out = [lines[0]]
    for line in lines[1:]:
        y, m, d = line[:10].split("-")
        out.append(f"{d}/{m}/{y}{line[10:]}")
    return out


def fixtures(root: Path) -> dict[str, str]:
    """Files the first round's cases refer to (and the later rounds build on), made once per test in ``root``."""
    root.mkdir()
    f: dict[str, str] = {}
    f["inf_close"] = _csv_dir(root, "inf_close", lambda ls: _set_field(ls, 1200, 4, "inf"))
    f["inf_adj"] = _csv_dir(root, "inf_adj", lambda ls: _set_field(ls, 1200, 5, "inf"))
    f["day_first"] = _csv_dir(root, "day_first", _day_first)
    f["lower_header"] = _csv_dir(root, "lower_header", lambda ls: [ls[0].lower(), *ls[1:]])
    f["semicolons"] = _csv_dir(root, "semicolons", lambda ls: [x.replace(",", ";") for x in ls])
    f["close_only"] = _csv_dir(root, "close_only", lambda ls: [",".join(x.split(",")[i] for i in (0, 4)) for x in ls])
    (root / "msft_only").mkdir()  # a dataset without the default ticker
    (root / "msft_only" / "MSFT.csv.gz").write_bytes((SAMPLE / "prices" / "MSFT.csv.gz").read_bytes())
    f["msft_only"] = str(root / "msft_only")
    gz = root / "corrupt_gz"
    gz.mkdir()
    (gz / "TSLA.csv.gz").write_bytes((SAMPLE / "prices" / "TSLA.csv.gz").read_bytes()[:400])
    f["corrupt_gz"] = str(gz)
    (root / "a_file").write_text("not a directory\n")
    f["a_file"] = str(root / "a_file")
    (root / "latin1.yaml").write_bytes("tickers: [TSLA]\n# r\xe9sum\xe9\n".encode("latin-1"))
    f["latin1"] = str(root / "latin1.yaml")
    (root / "binary.yaml").write_bytes(bytes(range(256)))
    f["binary"] = str(root / "binary.yaml")
    (root / "key.yaml").write_text(
        "strategies: [llm-trader]\nllm: {backend: openai, model: x, api_key_env: sk-proj-abc123def456}\n"
    )
    f["key_cfg"] = str(root / "key.yaml")
    (root / "lower_name").mkdir()  # a file named in lower case: --ticker tsla is read as TSLA
    (root / "lower_name" / "tsla.csv.gz").write_bytes((SAMPLE / "prices" / "TSLA.csv.gz").read_bytes())
    f["lower_name"] = str(root / "lower_name")
    (root / "a_run").mkdir()  # a run directory given as --data: its equity.csv read as a ticker's prices
    for name in ("equity.csv", "metrics.json"):
        (root / "a_run" / name).write_text("{}\n")
    f["a_run"] = str(root / "a_run")
    (root / "no_date.yaml").write_text("tickers: [TSLA]\nstart: 2022-13-45\n")  # date-shaped, no date: PyYAML raised
    f["no_date"] = str(root / "no_date.yaml")
    (root / "dup_key.yaml").write_text("tickers: [TSLA]\nbroker: {cash: 1000}\nbroker: {fill: close}\n")
    f["dup_key"] = str(root / "dup_key.yaml")
    (root / "notsqlite").write_text("hello, I am not a database\n" * 50)
    f["notsqlite"] = str(root / "notsqlite")
    for name, text in (("run_empty", ""), ("run_garbage", "what,is\nthis,file\n")):
        (root / name).mkdir()
        (root / name / "equity.csv").write_text(text)
        f[name] = str(root / name)
    (root / "run_ok").mkdir()
    (root / "run_ok" / "equity.csv").write_text("date,value\n2023-01-03,100.0\n2023-01-04,101.0\n")
    (root / "run_ok" / "metrics.json").write_text('{"n_days": 2, "status": "complete"}\n')
    f["run_ok"] = str(root / "run_ok")
    (root / "audio_dir").mkdir()
    f["audio_dir"] = str(root / "audio_dir")
    (root / "empty.ogg").write_bytes(b"")
    f["empty_ogg"] = str(root / "empty.ogg")
    return f
