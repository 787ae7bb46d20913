"""The trial ledger: every scored strategy a user ran, so a best Sharpe can be deflated by the true count.

The best of many Sharpe ratios is biased upward, and the correction (the
deflated Sharpe ratio) needs the number of trials, which a results table
alone never shows. Every run that scores a strategy (a backtest, a
training's test run, an experiment's test runs and baselines, every window
of a rolling evaluation, a protocol comparison, on Ray or not) appends one
row per strategy x window x repeat to a SQLite file:

    $FINCON_LEDGER, else $XDG_DATA_HOME/fincon/trials.sqlite, else
    ~/.local/share/fincon/trials.sqlite  (``--ledger PATH`` to choose another,
    ``--ledger off`` to keep none)

A row: when it was first seen, its study (the tickers and the window: the
same question asked again), the config's hash (location-free, as in
run_manifest.json), the strategy, its model and that model's knowledge
label, the beliefs version, the window, the days, a digest of the daily
returns, CR and Sharpe. The same config run again is the same trial (its
hash and window), never a new one. The run's own directory gets the same
rows as ``trials.csv`` (without the time, so the run stays byte-identical).
``fincon ledger`` lists and summarises it.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import os
import sqlite3
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from fincon.errors import ConfigError

COLUMNS = (
    "study",
    "config_hash",
    "strategy",
    "repeat",
    "model",
    "model_knowledge",
    "beliefs_version",
    "tickers",
    "start",
    "end",
    "n_days",
    "returns_digest",
    "cr_pct",
    "sharpe",
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS trials (
    first_seen TEXT NOT NULL,
    study TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    strategy TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    model TEXT,
    model_knowledge TEXT,
    beliefs_version INTEGER,
    tickers TEXT NOT NULL,
    start TEXT NOT NULL,
    end TEXT NOT NULL,
    n_days INTEGER NOT NULL,
    returns_digest TEXT NOT NULL,
    cr_pct REAL,
    sharpe REAL,
    PRIMARY KEY (config_hash, strategy, start, end, repeat)
)
"""


def default_path() -> Path:
    env = os.environ.get("FINCON_LEDGER")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fincon" / "trials.sqlite"


def resolve(spec: str | Path | None) -> Path | None:
    """``--ledger``: a path, ``off`` (None: keep no ledger), or (None) the
    default, itself ``$FINCON_LEDGER`` when set (``off`` there too)."""
    if spec is None:
        spec = os.environ.get("FINCON_LEDGER") or default_path()
    if str(spec) == "off":
        return None
    path = Path(spec).expanduser()
    if path.is_dir():
        raise ConfigError(f"--ledger {spec} is a directory; give a file such as {path / 'trials.sqlite'}")
    return path


def study_of(tickers: Sequence[str], start: str, end: str) -> str:
    return f"{','.join(tickers)} {start}..{end}"


def returns_digest(values: Iterable[float]) -> str:
    """sha256 of the equity curve's daily returns, rounded to 10 digits."""
    v = list(values)
    rets = [f"{(b / a - 1.0):.10f}" if a else "nan" for a, b in zip(v, v[1:])]
    return hashlib.sha256(",".join(rets).encode()).hexdigest()[:16]


def row(
    *,
    config_hash: str,
    strategy: str,
    tickers: Sequence[str],
    start: str,
    end: str,
    values: Sequence[float],
    metrics: Mapping[str, Any],
    knowledge: Mapping[str, Any] | None = None,
    beliefs_version: int | None = None,
    repeat: int = 1,
) -> dict[str, Any]:
    return {
        "study": study_of(tickers, start, end),
        "config_hash": config_hash,
        "strategy": strategy,
        "repeat": repeat,
        "model": (knowledge or {}).get("model"),
        "model_knowledge": (knowledge or {}).get("label"),
        "beliefs_version": beliefs_version,
        "tickers": ",".join(tickers),
        "start": start,
        "end": end,
        "n_days": max(0, len(values) - 1),
        "returns_digest": returns_digest(values),
        "cr_pct": metrics.get("cr_pct"),
        "sharpe": metrics.get("sharpe"),
    }


def rows_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """``trials.csv`` of a run: its rows without the time they were first seen."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r[k]) for k in COLUMNS})
    return buf.getvalue()


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(SCHEMA)
    return conn


def append(path: Path | None, rows: Sequence[Mapping[str, Any]]) -> int:
    """Add ``rows`` (a rerun of a trial already there adds nothing); the count added."""
    if path is None or not rows:
        return 0
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    try:
        conn = _connect(path)
    except (sqlite3.Error, OSError) as exc:
        raise ConfigError(f"trial ledger {path}: cannot open ({exc}); give another with --ledger PATH") from None
    try:
        with conn:
            before = conn.total_changes
            conn.executemany(
                f"INSERT OR IGNORE INTO trials (first_seen, {', '.join(COLUMNS)}) "
                f"VALUES (?, {', '.join('?' for _ in COLUMNS)})",
                [(now, *(r.get(k) for k in COLUMNS)) for r in rows],
            )
            return conn.total_changes - before
    finally:
        conn.close()


def read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM trials ORDER BY first_seen, study, strategy")]
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"trial ledger {path}: not a fincon ledger ({exc})") from None
    finally:
        conn.close()


def counts(path: Path | None) -> dict[str, int]:
    """study -> the distinct trials (config and strategy) the ledger holds for it (one read)."""
    if path is None or not path.is_file():
        return {}
    seen: dict[str, set[tuple[str, str]]] = {}
    for r in read(path):
        seen.setdefault(r["study"], set()).add((r["config_hash"], r["strategy"]))
    return {study: len(trials) for study, trials in seen.items()}


def count(path: Path | None, studies: Iterable[str]) -> int:
    """Distinct trials (config and strategy) the ledger holds for any of ``studies``."""
    if path is None or not path.is_file():
        return 0
    wanted = set(studies)
    return len({(r["config_hash"], r["strategy"]) for r in read(path) if r["study"] in wanted})


def summary(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per study: trials, the best Sharpe, its strategy, and how many trials came before it."""
    out = []
    for study in sorted({r["study"] for r in rows}):
        rs = [r for r in rows if r["study"] == study]
        scored = [r for r in rs if r.get("sharpe") is not None and r["sharpe"] == r["sharpe"]]
        best = max(scored, key=lambda r: r["sharpe"], default=None)
        out.append(
            {
                "study": study,
                "trials": len(rs),
                "configurations": len({r["config_hash"] for r in rs}),
                "best_sharpe": best["sharpe"] if best else None,
                "best_strategy": best["strategy"] if best else None,
                "tried_before_best": rs.index(best) if best else None,
                "model_labels": sorted({r["model_knowledge"] for r in rs if r.get("model_knowledge")}),
            }
        )
    return out
