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

A row: when it was first seen, its study (the tickers and the window), the
config's hash (location-free, as in run_manifest.json), the strategy, its
model and that model's knowledge label, the beliefs version, the window, the
days, a digest of the daily returns, CR, Sharpe (annualised and daily) and
its role: a ``trial`` (a configuration tried) or a ``control`` (a placebo run
of an experiment: a check of a trial, never a configuration tried and never
a study's best). The same config run again is the same trial (its hash and
window), never a new one, unless it traded otherwise (a model at
temperature asked afresh): that is another draw, the next repeat. The
run's own directory gets the same rows as ``trials.csv`` (without the
time, so the run stays byte-identical).

Counting (what DSR's N and ``fincon ledger`` use): trials on the same
tickers whose test windows overlap form one *family*: moving a window by a
day is another trial of the same question, not a new question. Within a
family a trial is a distinct daily return series (its digest): two
configurations that traded identically (repeats identical with one episode,
an ablation that changed nothing, a flag no model reads) are one trial, and
the variance of the trials' Sharpe ratios is taken over the same distinct
series. Trials on other tickers over days a family shares are other
questions (other series) but a result picked among tickers was picked
among them too: each family names them (``beside``), and
:meth:`Family.picked_among` counts them. ``fincon ledger`` lists and summarises it.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import math
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from fincon.errors import ConfigError
from fincon.ownership import sqlite_foreign, sqlite_wal
from fincon.workflow.tables import MIN_STAT_DAYS

COLUMNS = ("study", "config_hash", "strategy", "repeat", "model", "model_knowledge", "beliefs_version", "tickers",
           "start", "end", "n_days", "returns_digest", "cr_pct", "sharpe", "sharpe_daily", "role")  # fmt: skip
#: the columns every fincon ledger has had; the two after them are added to an older ledger when it is opened
BASE_COLUMNS = COLUMNS[:-2]
TRIAL, CONTROL = "trial", "control"

SCHEMA = """
CREATE TABLE IF NOT EXISTS trials (
    first_seen TEXT NOT NULL, study TEXT NOT NULL, config_hash TEXT NOT NULL, strategy TEXT NOT NULL,
    repeat INTEGER NOT NULL, model TEXT, model_knowledge TEXT, beliefs_version INTEGER, tickers TEXT NOT NULL,
    start TEXT NOT NULL, end TEXT NOT NULL, n_days INTEGER NOT NULL, returns_digest TEXT NOT NULL, cr_pct REAL,
    sharpe REAL, sharpe_daily REAL, role TEXT NOT NULL DEFAULT 'trial',
    PRIMARY KEY (config_hash, strategy, start, end, repeat)
)
"""
_ADDED = {"sharpe_daily": "REAL", "role": "TEXT NOT NULL DEFAULT 'trial'"}
#: a ledger row written before the daily Sharpe was kept: its annualised one over sqrt(252)
_DAYS_PER_YEAR = 252


def default_path() -> Path:
    env = os.environ.get("FINCON_LEDGER")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fincon" / "trials.sqlite"


def resolve(spec: str | Path | None) -> Path | None:
    """``--ledger``: a path, ``off`` (None: keep no ledger), or (None) the
    default, itself ``$FINCON_LEDGER`` when set (``off`` there too). The file
    is checked now, before any work: a directory, a file that is not SQLite
    or a database of the user's that is no fincon ledger is one line here,
    never found (or altered) when the run ends."""
    given = spec is not None
    if spec is None:
        spec = os.environ.get("FINCON_LEDGER") or default_path()
    flag = "--ledger" if given else ("FINCON_LEDGER" if os.environ.get("FINCON_LEDGER") else "the default ledger")
    if not str(spec).strip():
        raise ConfigError(f"{flag} is empty; give a file such as runs/trials.sqlite, or off")
    if str(spec) == "off":
        return None
    path = Path(spec).expanduser()
    if path.is_dir():
        raise ConfigError(f"{flag} {spec} is a directory; give a file such as {path / 'trials.sqlite'}")
    check(path, flag)
    return path


def check(path: Path, flag: str = "--ledger") -> None:
    """Refuse a file at ``path`` that is not a fincon ledger (nothing is written to it)."""

    why = sqlite_foreign(path, {"trials": BASE_COLUMNS})
    if why and ("I/O" in why or "locked" in why):  # a ledger that cannot be read now, not another file
        raise ConfigError(f"{flag} {path} cannot be read now ({why}); give another file, or off")
    if why:
        raise ConfigError(
            f"{flag} {path} is not a fincon trial ledger ({why}); it was left as it is: give another file, or off"
        )


def study_of(tickers: Sequence[str], start: str, end: str) -> str:
    return f"{','.join(tickers)} {start}..{end}"


def daily_returns(values: Sequence[float]) -> list[float]:
    v = list(values)
    return [(b / a - 1.0) if a else float("nan") for a, b in zip(v, v[1:])]


def returns_digest(values: Iterable[float]) -> str:
    """sha256 of the equity curve's daily returns, rounded to 10 digits."""
    rets = [f"{r:.10f}" if r == r else "nan" for r in daily_returns(list(values))]
    return hashlib.sha256(",".join(rets).encode()).hexdigest()[:16]


def daily_sharpe(values: Sequence[float]) -> float | None:
    """Mean over the sample standard deviation (ddof 1) of the daily returns,
    as fincon.risk.significance computes it (None: fewer than two days)."""
    r = [x for x in daily_returns(values) if x == x]
    if len(r) < 2 or min(values) <= 0:  # a book at or below zero: its returns' sign flips with it (no Sharpe)
        return None
    sd = math.sqrt(_var(r))
    return sum(r) / len(r) / sd if sd > 0 else 0.0


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
    role: str = TRIAL,
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
        "sharpe_daily": daily_sharpe(values),
        "role": role,
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
    check(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=30)
    sqlite_wal(conn)
    conn.execute(SCHEMA)
    have = {r[1] for r in conn.execute("PRAGMA table_info(trials)")}
    for col, decl in _ADDED.items():  # a ledger from before the column: its rows are trials, daily Sharpe unknown
        if col not in have:
            try:
                conn.execute(f"ALTER TABLE trials ADD COLUMN {col} {decl}")
            except sqlite3.OperationalError as exc:
                if "duplicate column" not in str(exc):  # another run added it just now
                    raise
    return conn


def writable(path: Path | None) -> None:
    """Open (create) the ledger and take its write lock once, before a run's work: found as the run
    ended, a ledger that cannot be written (read-only, on a full disk) left the committed run counted
    nowhere (exit 2 beside it)."""
    if path is None:
        return
    conn = open_ledger(path)
    try:
        conn.isolation_level = None
        conn.execute("BEGIN IMMEDIATE")  # a write (of the header's own value), undone: a read-only file fails here
        conn.execute(f"PRAGMA user_version = {int(conn.execute('PRAGMA user_version').fetchone()[0])}")
        conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        raise ConfigError(f"trial ledger {path}: cannot write ({exc}); give another with --ledger PATH") from None
    finally:
        conn.close()


def open_ledger(path: Path) -> sqlite3.Connection:
    """The ledger at ``path``, opened (its table made), or one line naming why not."""
    try:
        return _connect(path)
    except (sqlite3.Error, OSError) as exc:
        raise ConfigError(f"trial ledger {path}: cannot open ({exc}); give another with --ledger PATH") from None


def append(path: Path | None, rows: Sequence[Mapping[str, Any]]) -> int:
    """Add ``rows``; the count added. A rerun of a trial already there that traded the same adds
    nothing; one that traded otherwise (a model at temperature, asked afresh) is another draw of its
    config, added as the next repeat, so that running a config until a good series comes out counts
    every series (a draw seen before adds nothing again)."""
    if path is None or not rows:
        return 0
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    conn = open_ledger(path)
    insert = (
        f"INSERT OR IGNORE INTO trials (first_seen, {', '.join(COLUMNS)}) VALUES (?, {', '.join('?' for _ in COLUMNS)})"
    )
    try:
        conn.isolation_level = None
        conn.execute("BEGIN IMMEDIATE")  # another run's draw between the look and the insert: not the same repeat
        try:
            before = conn.total_changes
            for r in rows:
                key = (r["config_hash"], r["strategy"], r["start"], r["end"])
                drawn = conn.execute(
                    "SELECT repeat, returns_digest FROM trials WHERE config_hash = ? AND strategy = ? AND start = ? "
                    "AND end = ?",
                    key,
                ).fetchall()
                at = dict(drawn).get(r["repeat"])
                if at is not None and at != r["returns_digest"]:  # its repeat holds another series
                    if any(d == r["returns_digest"] for _, d in drawn):
                        continue
                    r = {**r, "repeat": max(k for k, _ in drawn) + 1}
                conn.execute(insert, (now, *(r.get(k) for k in COLUMNS)))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return conn.total_changes - before
    except sqlite3.Error as exc:  # locked past its timeout, read-only since, a disk that filled
        raise ConfigError(f"trial ledger {path}: cannot write ({exc})") from None
    finally:
        conn.close()


def read(path: Path) -> list[dict[str, Any]]:
    """Every row in the order it was added (a row of a ledger from before the role: a trial)."""
    if not path.is_file():
        return []
    check(path)
    # opened read-write (only read): the last connection to a WAL file checkpoints it and removes its -wal
    # and -shm files, which a read-only one would leave beside the ledger; read-only where it must be
    conn = sqlite3.connect(str(path), timeout=30)
    try:
        conn.execute("SELECT 1 FROM trials LIMIT 1")
    except sqlite3.Error:
        conn.close()
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute("SELECT * FROM trials ORDER BY rowid")]  # the order they were added
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"trial ledger {path}: not a fincon ledger ({exc})") from None
    finally:
        conn.close()
    for r in rows:
        r.setdefault("role", TRIAL)
        r.setdefault("sharpe_daily", None)
    return rows


@dataclass
class Family:
    """Rows on the same tickers whose windows overlap (chained: a window that overlaps either of two joins
    them), trials and controls apart."""

    tickers: str
    start: str
    end: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    #: the other ticker sets' families over days this one shares (:func:`family_of`): a pick among tickers
    others: list[Family] = field(default_factory=list)

    @property
    def beside(self) -> dict[str, int]:
        """The distinct trials of each ticker set in :attr:`others` ("a family of ten tickers tried")."""
        return beside([(f.tickers, f.start, f.end, f.trials) for f in self.others], self.tickers, self.start, self.end)

    @property
    def name(self) -> str:
        return f"{self.tickers} {self.start}..{self.end}"

    @property
    def trial_rows(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("role", TRIAL) != CONTROL]

    @property
    def controls(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("role") == CONTROL]

    @property
    def distinct(self) -> list[dict[str, Any]]:
        """One row per distinct daily return series among the trials (the first seen)."""
        seen: dict[str, dict[str, Any]] = {}
        for r in self.trial_rows:
            seen.setdefault(r["returns_digest"], r)
        return list(seen.values())

    @property
    def trials(self) -> int:
        return len(self.distinct)

    @property
    def scorable(self) -> list[dict[str, Any]]:
        """The distinct trials with a Sharpe ratio worth the name (:data:`MIN_STAT_DAYS` daily returns or
        more): a 2-day run's Sharpe of 16 is noise, so it is counted as a try but is never a family's best,
        and its spread (its estimate's, not the tries') is kept out of the variance."""
        return [r for r in self.distinct if int(r.get("n_days") or 0) >= MIN_STAT_DAYS]

    @property
    def sharpes(self) -> list[float]:
        """The daily Sharpe ratios the ledger holds for the scorable trials (a journal's once a step has given it)."""
        return [x for x in (_daily(r) for r in self.scorable) if x is not None]

    def sharpe_var(self) -> float:
        """The variance (ddof 1) of :attr:`sharpes`; NaN for fewer than two: unknown, so a DSR over the
        family's trials has no spread to deflate by (0 would deflate by nothing and read as deflated)."""
        return _var(self.sharpes)

    def picked_among(self) -> tuple[int, float]:
        """The trials a result over these days was picked among, this family's and :attr:`others`' (a pick
        among tickers is a pick too), and the variance (ddof 1) of their Sharpe ratios (NaN under two)."""
        # in this family's daily units: a coin's daily Sharpe is per calendar day (365 a year), a stock's per
        # session (252); pooled as they were, a BTC trial's read sqrt(252/365) of itself beside TSLA's (DSR 0.91
        # where 0.922, found in review)
        days = next((d for r in self.scorable if (d := _days_a_year(r))), _DAYS_PER_YEAR)
        pooled = [*self.sharpes] + [
            x * math.sqrt((_days_a_year(r) or days) / days)
            for f in self.others
            for r in f.scorable
            if (x := _daily(r)) is not None
        ]
        return self.trials + sum(self.beside.values()), _var(pooled)


def _var(s: Sequence[float]) -> float:
    mean = sum(s) / len(s) if s else math.nan
    return sum((x - mean) ** 2 for x in s) / (len(s) - 1) if len(s) > 1 else math.nan


def _daily(r: Mapping[str, Any]) -> float | None:
    if r.get("sharpe_daily") is not None:
        return float(r["sharpe_daily"])
    if r.get("sharpe") is None or r["sharpe"] != r["sharpe"]:
        return None
    return float(r["sharpe"]) / math.sqrt(_DAYS_PER_YEAR)


def _days_a_year(r: Mapping[str, Any]) -> int | None:
    """The days a year of a row's market: 365 when its returns cover nearly every calendar day of its window
    (a coin's), else an exchange's 252; None when the row does not say its window."""
    try:
        span = (dt.date.fromisoformat(str(r["end"])) - dt.date.fromisoformat(str(r["start"]))).days
        n = int(r.get("n_days") or 0)
    except (KeyError, ValueError):
        return None
    return None if span <= 0 or not n else (365 if n / span > 6 / 7 else _DAYS_PER_YEAR)


def universe(tickers: str) -> str:
    """A row's tickers as a family knows them: the set, sorted ("MSFT,TSLA" for "TSLA,MSFT"; one
    universe named in two orders was two families, each its own best)."""
    return ",".join(sorted(tickers.split(",")))


def families(rows: Sequence[Mapping[str, Any]]) -> list[Family]:
    """The ledger's rows cut into families (module docstring), by tickers (the set, in any order), then
    start."""
    out: list[Family] = []
    by: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for i, r in enumerate(rows):
        by.setdefault(universe(r["tickers"]), []).append((i, r))
    for tickers in sorted(by):
        current: Family | None = None
        order: list[list[int]] = []
        for i, r in sorted(by[tickers], key=lambda x: (x[1]["start"], x[1]["end"])):
            if current is not None and r["start"] <= current.end:
                current.end = max(current.end, r["end"])
            else:
                current = Family(tickers, r["start"], r["end"])
                out.append(current)
                order.append([])
            current.rows.append(dict(r))
            order[-1].append(i)
        for f, idx in zip(out[len(out) - len(order) :], order):  # each family's rows in the order given
            f.rows = [row for _, row in sorted(zip(idx, f.rows), key=lambda x: x[0])]
    return out


def family_of(rows: Sequence[Mapping[str, Any]], tickers: Sequence[str], start: str, end: str) -> Family:
    """The family a window on ``tickers`` belongs to (its rows' families that it overlaps, joined)."""
    key = universe(",".join(tickers))
    joined = Family(key, start, end)
    for f in families([r for r in rows if universe(r["tickers"]) == key]):
        if f.start <= end and start <= f.end:
            joined.start, joined.end = min(joined.start, f.start), max(joined.end, f.end)
            joined.rows += f.rows
    others = families([r for r in rows if universe(r["tickers"]) != key])
    joined.others = [f for f in others if f.start <= joined.end and joined.start <= f.end and f.trials]
    return joined


def beside(counted: Sequence[tuple[str, str, str, int]], tickers: str, start: str, end: str) -> dict[str, int]:
    """Each other ticker set's distinct trials over days ``start``..``end`` shares, from its families
    (``counted``: tickers, start, end and distinct trials of each) that overlap it: ten tickers tried and
    the best one shown is a pick among ten, which no family of one ticker counts (found by hand:
    sma-cross on four of the sample's tickers, TSLA's Sharpe of 1.05 read "tried before it: 0")."""
    out: dict[str, int] = {}
    for t, s, e, n in counted:
        if t != tickers and s <= end and start <= e and n:
            out[t] = out.get(t, 0) + n
    return out


def said_beside(beside: Mapping[str, int]) -> str:
    """:attr:`Family.beside` as a sentence lists it ("AMZN 1 trial, MSFT 2 trials")."""
    return ", ".join(f"{t} {n} trial{'s' * (n != 1)}" for t, n in sorted(beside.items()))


def family(path: Path | None, tickers: Sequence[str], start: str, end: str) -> Family:
    """The family of ``tickers`` over ``start``..``end`` in the ledger at ``path`` (empty: no ledger)."""
    rows = read(path) if path is not None and path.is_file() else []
    return family_of(rows, tickers, start, end)


def summary(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per family: its windows, the distinct trials (and how many are too short to score), the runs
    recorded and the controls, the best scorable trial by daily Sharpe (what DSR deflates; its annualised
    log Sharpe is a figure apart, and ranked otherwise), its strategy and how many came before it."""
    out = []
    fams = families(rows)
    counted = [(f.tickers, f.start, f.end, f.trials) for f in fams]
    for f in fams:
        distinct = f.distinct
        others = beside(counted, f.tickers, f.start, f.end)
        scored = [r for r in f.scorable if r.get("sharpe") is not None and r["sharpe"] == r["sharpe"]]
        best = max(scored, key=lambda r: _daily(r) or -math.inf, default=None)  # daily: DSR's, no days a year
        runs = [r for r in f.trial_rows if best and r["returns_digest"] == best["returns_digest"]]  # its series'
        out.append(
            {
                "family": f.name,
                "tickers": f.tickers,
                "windows": len({(r["start"], r["end"]) for r in f.rows}),
                "studies": sorted({r["study"] for r in f.rows}),
                "trials": len(distinct),
                "too_short": len(distinct) - len(f.scorable),
                "runs": len(f.trial_rows),
                "controls": len(f.controls),
                "configurations": len({r["config_hash"] for r in f.trial_rows}),
                "best_sharpe": runs[-1]["sharpe"] if best else None,  # as its latest run annualised it
                "best_sharpe_daily": _daily(best) if best else None,  # the figure it was chosen by
                "best_strategy": best["strategy"] if best else None,
                "best_study": best["study"] if best else None,
                "tried_before_best": distinct.index(best) if best else None,
                "sharpe_daily_var": f.sharpe_var(),
                "model_labels": sorted({r["model_knowledge"] for r in f.trial_rows if r.get("model_knowledge")}),
                "other_tickers": len(others),  # ticker sets tried over days the family shares
                "other_trials": sum(others.values()),
            }
        )
    return out
