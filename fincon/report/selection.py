"""The card's selection row: was the graded result one try among many?

Every other row grades the run as if it were the only one ever made. Run
sma-cross on five tickers, card the best: each row reads the same, and
nothing says the Sharpe ratio is the largest of five draws (found by hand:
NVDA's card on the sample read as it did alone). The trial ledger
(fincon.workflow.trials) counts the tries, so this row deflates the run's
Sharpe ratio by them (Bailey & López de Prado's DSR): the trials of its
family (its tickers, windows that overlap) and of the other ticker sets
tried over the same days, a pick among tickers being a pick too, their
Sharpe ratios' spread pooled. It passes at a DSR of 0.95.

The ledger is this machine's, not the directory's: the row reads one only
when asked (``fincon report --card``; a journal's score and its page: the
ledger its registration sealed); a run's HTML page reads none, so that its
bytes are the directory's.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

from fincon import risk
from fincon.engine.record import RunRecord
from fincon.errors import DataError
from fincon.report.evidence import FAIL, NONE, PASS, Evidence, Verdict, on_its_side
from fincon.workflow import trials
from fincon.workflow.tables import MIN_STAT_DAYS

#: the DSR a result must reach: 95 % that its Sharpe ratio beats the best of its trials with no edge
MIN_DSR = 0.95
TRIALS_CSV = "trials.csv"


def _trial_row(run: Path) -> dict[str, Any] | None:
    """The ledger's row of ``run`` as the run wrote it: its own ``trials.csv`` (a run of one strategy, an
    experiment's run) or its comparison's, by the strategy's name."""
    for path, name in ((run / TRIALS_CSV, None), (run.parent / TRIALS_CSV, run.name)):
        if path.is_file():
            with path.open(newline="", encoding="utf-8") as fh:
                rows = [
                    r
                    for r in csv.DictReader(fh)
                    if r.get("role") == trials.TRIAL and (name is None or r.get("strategy") == name)
                ]
            return rows[0] if len(rows) == 1 else None
    return None


def _recorded(eq: np.ndarray, rec: dict[str, Any]) -> bool:
    """Is ``eq`` (equity.csv's values) the series the ledger's row ``rec`` recorded? Its returns' digest, or,
    as equity.csv keeps 6 decimals of a value (NVDA's sma-cross on the sample digests otherwise than the
    values the run held), its days and its daily Sharpe ratio and CR (100 x the sum of its log returns) the
    row's to within that rounding (1e-13 and 1e-11 of NVDA's)."""
    if trials.returns_digest(eq) == rec["returns_digest"]:
        return True
    cr = float(100 * np.log(eq[1:] / eq[:-1]).sum()) if len(eq) > 1 and (eq > 0).all() else None
    said = [(trials.daily_sharpe(list(eq)), rec.get("sharpe_daily")), (cr, rec.get("cr_pct"))]
    kept = [(float(a), float(b)) for a, b in said if a is not None and b not in (None, "")]
    return (
        int(rec.get("n_days") or -1) == len(eq) - 1
        and bool(kept)
        and all(math.isclose(a, b, rel_tol=1e-7, abs_tol=1e-7) for a, b in kept)
    )


def _said(fam: trials.Family) -> str:
    return f"{fam.trials} in {fam.name}" + (
        f", {trials.said_beside(fam.beside)} on other tickers over the same days" if fam.beside else ""
    )


def selection(ev: Evidence) -> Verdict:
    if ev.rolling is not None:
        return NONE, (  # it said the windows' DSR was deflated by the ledger's count: by the evaluation's own series
            "a rolling evaluation: each window's DSR in its table is deflated by the series tried inside the "
            "evaluation, not by the trial ledger (`fincon ledger` counts what else was tried over its windows)"
        )
    if ev.ledger is None:
        return NONE, "the trial ledger not read (`fincon report --card RUN` reads it; a run's HTML page does not)"
    row = _trial_row(ev.run) if ev.run is not None else None
    if row is None:
        return NONE, "no trial in its trials.csv names this run (a control, or a run from before the trial ledger)"
    if not ev.ledger.is_file():
        return NONE, f"no trial ledger at {ev.ledger} (--ledger PATH names the one the run was counted in)"
    fam = trials.family(ev.ledger, row["tickers"].split(","), row["start"], row["end"])
    if row["returns_digest"] not in {r["returns_digest"] for r in fam.rows}:
        return NONE, (
            f"the trial ledger {ev.ledger} does not hold this run (run with --ledger off, on another machine, or "
            "another ledger: --ledger PATH): what was tried beside it is not known"
        )
    try:
        eq = RunRecord(ev.run).equity.to_numpy(dtype=float)
    except DataError:
        return NONE, "no equity curve to read"
    if not any(_recorded(eq, r) for r in fam.rows if r["returns_digest"] == row["returns_digest"]):
        return NONE, (  # an equity.csv swapped under its trials.csv was graded as the run the ledger counted (review)
            "its equity.csv is not the series the trial ledger recorded of this run (its returns are not those "
            "of the trial its trials.csv names): the tries counted beside that trial are not this series'"
        )
    r = eq[1:] / eq[:-1] - 1.0
    if len(r) < MIN_STAT_DAYS:
        return NONE, f"{len(r)} daily returns: too few for a Sharpe ratio to mean anything (under {MIN_STAT_DAYS})"
    if (eq <= 0).any():  # a ruined book's returns change sign with it: no Sharpe ratio is one
        return FAIL, "the book's value fell to zero or below: no Sharpe ratio of its returns means anything"
    moved = int((r != 0).sum())
    if 0 < moved < MIN_STAT_DAYS:  # one invested day out of 77 passed with DSR 0.97 (its skew made it sure)
        return NONE, (
            f"{moved} of {len(r)} daily returns moved (the book in cash the rest): too few for a Sharpe ratio to "
            f"mean anything (under {MIN_STAT_DAYS})"
        )
    (n, var), said = fam.picked_among(), _said(fam)
    dsr = risk.significance.track_record(r, n, var)["dsr"]
    measured = (
        f"DSR {on_its_side(dsr, lambda x: x >= MIN_DSR, 2)} of a daily Sharpe {risk.significance.sharpe(r):.3f} "
        f"over {len(r)} days, deflated by "
        f"{n} trial{'s' * (n != 1)} ({said}); a daily Sharpe of simple returns, not annualised, no risk-free rate "
        "(the headline Sharpe, annualised, of log returns by default, less it, can differ in sign)"
    )
    if not math.isfinite(dsr):
        if not r.std() > 0:
            return NONE, f"a series that never moved over {len(r)} days: no Sharpe ratio to test"
        return NONE, (
            f"{n} trials ({said}) and fewer than two Sharpe ratios of {MIN_STAT_DAYS} days or more among them: "
            "no spread to deflate by"
        )
    if dsr >= MIN_DSR:
        return PASS, measured
    luck = "zero" if n == 1 else f"the best of {n} tries with no edge"
    return FAIL, f"{measured}: under {MIN_DSR}, not told apart from {luck}"
