"""The leakage audit's log reader: a run's prompts read together, session after session.

The audit scores each prompt alone, as a model reads them (:mod:`fincon.llm.leakage`). Whoever holds a
run's call log (the call cache and ``llm_calls.csv`` ship with a run; a provider logs a run's calls
under one key) reads them together: on which sessions each analyst was asked, the new lines it listed,
the data analyst's indicator words. Found in review 2026-12-02: five sessions in a row of three masked
InvestorBench runs named firm and window first in every stretch among 816-873 candidates, where the
audit said inconclusive. This counts it in every audit: each stretch of ``n`` consecutive sessions of a
run is matched against every window of ``n`` sessions of every firm the corpus holds, each window
scored by how many of the stretch's observations it fits (:func:`fits`); the stretch names firm and
window when the true one alone scores highest. It is reported beside the verdict, not in it: a model
reads one prompt at a time, and what the verdict grades is what that prompt gives away.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from fincon.agents.protocols.fincon import FinConManager
from fincon.agents.replayed_prompts import Replayed, Table, item_lines, price_lines
from fincon.agents.roles.data_analysis import ROLE as DATA_ANALYST
from fincon.llm import leakage
from fincon.llm.leakage import ROLE_SOURCE
from fincon.llm.leakage_inputs import Prompt
from fincon.llm.leakage_verdict import share_of

#: the stretches read, in sessions: one alone (what the replaying adversary reads of one prompt), and more
LENGTHS = (1, 3, 5, 10)
Scores = dict[str, np.ndarray]  # firm -> one count per session of its calendar


def audit_run(root: Path, **kwargs: Any) -> dict[str, Any]:
    """:func:`fincon.llm.leakage.run_audit` with the replaying adversary and the log reader (what ``fincon
    eval leakage`` runs)."""
    return leakage.run_audit(root, replay=Replayed, together=read_together, **kwargs)


def read_together(replayed: Replayed, prompts: Sequence[Prompt]) -> dict[str, Any]:
    """Per stretch length, how many stretches of the runs' logged sessions name their firm and window
    alone; a stretch observed again (a training's next episode reading what the last one read) is counted
    once."""
    cal = _Calendars(replayed)
    named = {n: [0, 0] for n in LENGTHS}
    seen: set[tuple] = set()
    decided = _decided(prompts)
    for (run_name, firm), asked in sorted(_by_run_and_firm(replayed, prompts).items()):
        run = replayed.runs[run_name]
        if firm not in cal.at or run_name not in decided:
            continue
        first, last = decided[run_name]
        sessions = [d for d in cal.at[firm] if first <= d <= last]
        scores = [cal.scores(replayed, run, asked, day) for day in sessions]
        seen_on = [_observed(asked, day) for day in sessions]
        for n in LENGTHS:
            for s in range(len(sessions) - n + 1):
                key = (n, firm, tuple(sessions[s : s + n]), tuple(seen_on[s : s + n]))
                if key in seen:
                    continue
                seen.add(key)
                named[n][1] += 1
                named[n][0] += _names(scores[s : s + n], firm, cal.at[firm][sessions[s]])
    if not named[1][1]:
        return {}  # nothing masked to read together: no line
    return {
        "lengths": {str(n): share_of(k, total) for n, (k, total) in named.items()},
        "windows": {str(n): sum(max(0, len(c) - n + 1) for c in cal.at.values()) for n in LENGTHS},
    }


def _by_run_and_firm(replayed: Replayed, prompts: Sequence[Prompt]) -> dict[tuple[str, str], dict]:
    """Per masked run and firm of one firm's prompts: per analyst kind the audit replays, its text per day."""
    out: dict[tuple[str, str], dict[str, dict[dt.date, str]]] = defaultdict(lambda: defaultdict(dict))
    for p in prompts:
        run = replayed.runs.get(p.run)
        if run is None or not run.masked or len(p.tickers) != 1 or p.span is None or p.span[0] != p.span[1]:
            continue  # a named prompt gives firm and day away alone; a manager's of a portfolio is of many firms
        if p.kind in ROLE_SOURCE or p.kind == DATA_ANALYST.name:
            out[(p.run, p.tickers[0])][p.kind].setdefault(p.span[0], p.text)
    return out


def _decided(prompts: Sequence[Prompt]) -> dict[str, tuple[dt.date, dt.date]]:
    """Per run, its first and last session the log shows decided: a manager's call, the last of a day's
    (the engine asks nothing on a run's last session, and a run stopped mid-day logged some analysts of
    that day and not the others: read from the run's window, both were sessions of analysts "not asked",
    found in review 2026-12-03)."""
    days: dict[str, list[dt.date]] = defaultdict(list)
    for p in prompts:
        if p.kind == FinConManager.agent and p.span is not None and p.span[0] == p.span[1]:
            days[p.run].append(p.span[0])
    return {run: (min(d), max(d)) for run, d in days.items()}


def _observed(asked: dict[str, dict[dt.date, str]], day: dt.date) -> tuple:
    """What the reader scores of ``day``: each analyst's new lines (None: not asked), and the data
    analyst's indicator words, its last ones (a training's next episode sends the same with another line
    of beliefs: keyed by its whole text, each episode's same observations counted again, found in review
    2026-12-03)."""
    out = []
    for kind, texts in sorted(asked.items()):
        if kind == DATA_ANALYST.name:
            last = _last(texts, day)
            out.append((kind, price_lines(last) if last is not None else None))
        else:
            out.append((kind, item_lines(texts[day]) if day in texts else None))
    return tuple(out)


def _last(texts: dict[dt.date, str], day: dt.date) -> str | None:
    """The data analyst's text of its last session asked, up to ``day`` (reused when not asked)."""
    asked = [d for d in texts if d <= day]
    return texts[max(asked)] if asked else None


def fits(table: Table, lines: tuple[str, ...] | None) -> list[tuple[str, dt.date]] | None:
    """The firm-sessions an analyst's observation on a session fits: asked with ``lines``, those whose new
    lines begin them (any prefix: the memory's older items may follow); not asked (``lines`` None): None,
    every firm-session with no new item of its source (a new item is always asked about: it changes what
    the analyst reads)."""
    if lines is None:
        return None
    return [fs for m in range(1, len(lines) + 1) for fs in table.get(lines[:m], ())]


class _Calendars:
    """Every firm's sessions (``at``: firm -> day -> its index), and per table the firm-sessions it holds."""

    def __init__(self, replayed: Replayed):
        firms = sorted({e.ticker for e in replayed.k.events} & set(replayed.k.closes))
        self.at = {f: {d.date(): i for i, d in enumerate(replayed.k.closes[f].index)} for f in firms}
        self._held: dict[int, tuple[Table, dict[str, np.ndarray]]] = {}  # the table kept: its id stays its own

    def scores(self, replayed: Replayed, run, asked: dict[str, dict[dt.date, str]], day: dt.date) -> Scores:
        """Each firm-session's count of the observations of ``day`` it fits."""
        total: Scores = {f: np.zeros(len(at), dtype=np.int16) for f, at in self.at.items()}
        for kind, texts in asked.items():
            if kind == DATA_ANALYST.name:  # not asked: its lines are the last session's (the same reused)
                if (last := _last(texts, day)) is not None:
                    self._point(total, replayed.prices(run).get(price_lines(last), []))
                continue
            table = replayed.items(run, ROLE_SOURCE[kind])
            text = texts.get(day)
            hits = fits(table, item_lines(text) if text is not None else None)
            if hits is not None:
                self._point(total, hits)
            else:
                for f, held in self._holds(table).items():
                    total[f] += ~held
        return total

    def _point(self, total: Scores, hits) -> None:
        for f, d in set(hits):
            if f in total and d in self.at[f]:
                total[f][self.at[f][d]] += 1

    def _holds(self, table: Table) -> dict[str, np.ndarray]:
        if id(table) not in self._held:
            held = {f: np.zeros(len(at), dtype=bool) for f, at in self.at.items()}
            for f, d in {fs for found in table.values() for fs in found}:
                if f in held and d in self.at[f]:
                    held[f][self.at[f][d]] = True
            self._held[id(table)] = (table, held)
        return self._held[id(table)][1]


def _names(stretch: Sequence[Scores], firm: str, at: int) -> bool:
    """Does the true window (``firm``'s sessions from ``at``) alone score highest?"""
    n = len(stretch)
    best_other, truth = -1, -1
    for f in stretch[0]:
        length = len(stretch[0][f]) - n + 1
        if length <= 0:
            continue
        window = np.sum([s[f][j : j + length] for j, s in enumerate(stretch)], axis=0)
        if f == firm:
            truth = int(window[at])
            window = np.delete(window, at)
        if len(window):
            best_other = max(best_other, int(window.max()))
    return truth > best_other
