"""A forward journal in the trial ledger (fincon.workflow.trials): one trial per strategy from its
registration, so that twenty journals cannot be started and the best one shown alone; each step brings
the trial's window, return series and Sharpe up to date, so that a family of journals has the spread of
Sharpe ratios a deflated Sharpe ratio needs (a registration alone has none)."""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import sqlite3
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from fincon.engine.result import BacktestResult
from fincon.errors import ConfigError
from fincon.workflow import trials
from fincon.workflow.forward_plan import Plan

log = logging.getLogger(__name__)


def resolve(spec: str | None) -> str:
    """The ledger a journal registers in (``--ledger``; None: FINCON_LEDGER or the default; checked now):
    its absolute path, or ``off``. The register entry seals it, so that every step and every score counts
    the journal's trials in that one ledger, whatever the environment says later."""
    path = trials.resolve(spec)
    return str(path.absolute()) if path is not None else "off"


def ledger_of(entry: Mapping[str, Any]) -> Path | None:
    """The ledger the register ``entry`` sealed (None: off); a journal registered before the entry sealed
    one counts in today's default ledger."""
    sealed = entry.get("ledger")
    if sealed is None:
        return trials.resolve(None)
    return None if sealed == "off" else Path(sealed)


def register(plan: Plan, entry: Mapping[str, Any]) -> None:
    """The journal's trials at its registration (``entry``: the register entry), each a series of its own
    until a step gives it the journal's (two strategies of one journal are two trials)."""

    first = str(plan.first)
    trials.append(
        ledger_of(entry),
        [
            _row(plan, entry, name, first, _own(entry, name), {"cr_pct": None, "sharpe": None})
            for name in plan.config.strategies
        ],
    )


def _own(entry: Mapping[str, Any], name: str) -> list[float]:
    """A registered strategy's series until a step gives it the journal's: its own, so that two
    registrations are two trials."""
    return [1.0, 1.0 + int(hashlib.sha256(f"{entry['hash']}:{name}".encode()).hexdigest()[:8], 16) / 2**40]


def track(plan: Plan, entry: Mapping[str, Any], results: Mapping[str, BacktestResult], day: dt.date) -> None:
    """Each strategy's trial after the session decided at ``day``: the replay's values and metrics to date.
    A ledger that cannot be written is said in a warning: the session is sealed, the journal holds it."""
    rows = [_row(plan, entry, name, str(day), list(r.values), r.metrics.as_dict()) for name, r in results.items()]

    def same(row: Mapping[str, Any], n_days: int, digest: str) -> bool | None:  # the row is this journal's so far
        values = list(results[row["strategy"]].values)
        if digest == trials.returns_digest(_own(entry, row["strategy"])):
            return True
        if n_days >= len(values):  # a copy further on: its start is not kept, so no telling yet
            return None
        return digest == trials.returns_digest(values[: n_days + 1])

    try:
        for name in _track(ledger_of(entry), rows, same):
            log.warning(
                "%s: this journal's returns are not those its registration's trial holds (a copy of the journal, "
                "stepped apart): counted in the ledger as another run of the trial, as a second try is",
                name,
            )
    except (ConfigError, sqlite3.Error, OSError) as exc:
        log.warning("the trial ledger was not brought up to date (%s); the next step tries again", exc)


def _row(plan: Plan, entry: Mapping[str, Any], name: str, end: str, values: list[float], metrics: Mapping[str, Any]):
    return trials.row(
        # the journal is its registration: two journals of one plan are two runs (of one trial, if their
        # series agree); keyed by the plan's hash, a step updated both journals' rows to one window
        config_hash=entry["hash"],
        strategy=name,
        tickers=plan.config.tickers,
        start=str(plan.first),
        end=end,
        values=values,
        metrics=metrics,
        knowledge=entry["models"].get(name),  # the model and its label, as the register entry seals them
    )


def _track(
    path: Path | None,
    rows: Sequence[Mapping[str, Any]],
    same: Callable[[Mapping[str, Any], int, str], bool | None] = lambda r, n, d: True,
) -> list[str]:
    """A forward journal's trials brought up to date: each row replaces the one of its journal (its
    register entry's hash) and strategy whose series ``same(row, n_days, digest)`` says the row's own
    (its registration's, or the start of the row's series), whatever window it had; a row not there yet
    is added (one trial a strategy). A row none of whose journal's is its own, where each could be told
    (None: a row further on than the row's series, left as it is until it can), is a copy of the journal
    stepped apart (found in review: its steps overwrote the other's series, two journals of different
    returns counted as one trial): added as another repeat. Returns the strategies so added."""
    if path is None or not rows:
        return []
    conn = trials.open_ledger(path)
    keep = [k for k in trials.COLUMNS if k not in ("config_hash", "strategy", "repeat", "role")]
    new, forks = [], []
    try:
        with conn:
            for r in rows:
                key = [r["config_hash"], r["strategy"], trials.TRIAL]
                had = conn.execute(
                    "SELECT repeat, n_days, returns_digest FROM trials WHERE config_hash = ? AND strategy = ? "
                    "AND role = ? ORDER BY repeat",
                    key,
                ).fetchall()
                told = [(rep, same(r, int(n), d)) for rep, n, d in had]
                own = next((rep for rep, yes in told if yes), None)
                if own is None and any(yes is None for _, yes in told):
                    continue  # a copy behind the row: told apart (or not) once it has caught up
                if own is not None:
                    conn.execute(
                        f"UPDATE trials SET {', '.join(f'{k} = ?' for k in keep)} "
                        "WHERE config_hash = ? AND strategy = ? AND role = ? AND repeat = ?",
                        [*(r.get(k) for k in keep), *key, own],
                    )
                elif had:
                    forks.append({**r, "repeat": max(rep for rep, _, _ in had) + 1})
                else:
                    new.append(r)
    finally:
        conn.close()
    trials.append(path, new + forks)
    return [r["strategy"] for r in forks]
