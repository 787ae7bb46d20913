"""Calibration of the analysts' calls, read from a team's records: each call's direction and
confidence against the next close, a hit rate per confidence bucket and per analyst, and the
Brier score with its uncertainty (the report card's calibration and disaggregation points)."""

from __future__ import annotations

import math
from typing import Any, Sequence


def calibration(*runs: list[dict[str, Any]], after: Sequence[dict[str, float]] = ()) -> dict[str, Any] | None:
    """Each analyst's direction and confidence in each run's decisions against that run's next close's
    move (runs apart: a rolling evaluation's window never scores its last call against the next window's
    first close; a date in two windows is one day, one close moved both). A run's last decision is scored
    against ``after[k]``, the closes of the session after it that run k's own files hold
    (fincon.report.evidence); without them its calls are left out, counted in ``last_unscored`` (the runs
    whose last day went unscored: each run lost its last day before 2026-12):
    hit rate by confidence bucket, the Brier score of P(up) = 0.5 +/- conf/2
    beside the base rate's (always saying the share of rises: a bull market's
    "bullish" every day is no skill), and per analyst kind the hit rate, the
    count of directional calls and ``chance``, the hit rate its own mix of
    bullish and bearish calls would score on those days if it told nothing
    (each ticker's in each run apart, weighted by its calls: :func:`_chance`),
    and ``judgements``: the calls it made afresh (a report read again with
    its inputs unchanged, ``via: reuse``, is the judgement it repeats: a
    10-Q analyst's one call scored on the 60 days of a quarter is one
    judgement, not 60 independent ones). An analyst with nothing to read
    (``via: empty``) made no call: its default "neutral" is not scored."""
    rows, unscored = [], 0
    for k, decisions in enumerate(runs):
        closes = after[k] if k < len(after) else {}
        rows += _scored(k, [*decisions, {"record": {"closes": closes}}] if decisions else decisions)
        unscored += any(t not in closes for t in _called(decisions[-1:]))
    if not rows:
        return None
    brier = sum((r[3] - r[4]) ** 2 for r in rows) / len(rows)
    directional = [r for r in rows if r[1] != "neutral"]
    buckets = {}
    for lo in (0.0, 0.5, 0.7, 0.9):
        hi = {0.0: 0.5, 0.5: 0.7, 0.7: 0.9, 0.9: 1.01}[lo]
        sel = [r for r in directional if lo <= r[2] < hi]
        if sel:
            hits = sum((r[1] == "bullish") == (r[4] == 1.0) for r in sel)
            buckets[f"{lo:.1f}-{min(hi, 1.0):.1f}"] = {"n": len(sel), "hit_rate": round(hits / len(sel), 4),
                                                       "judgements": len({r[6] for r in sel})}  # fmt: skip
    per = {}
    for kind in sorted({r[0] for r in directional}):
        sel = [r for r in directional if r[0] == kind]
        hits = sum((r[1] == "bullish") == (r[4] == 1.0) for r in sel)
        per[kind] = {"n": len(sel), "hits": hits, "hit_rate": round(hits / len(sel), 4), "chance": _chance(sel),
                     "judgements": len({r[6] for r in sel})}  # fmt: skip
    base = sum(r[4] for r in rows) / len(rows)  # the share of calls followed by a rise: the drift, in hindsight
    return {
        "calls": len(rows),
        "directional": len(directional),
        "brier": round(brier, 4),
        "days": len({r[5] for r in rows}),
        "brier_upper_95": _upper_bound([((r[3] - r[4]) ** 2, r[5], r[6]) for r in rows]),
        "base_rate": round(base, 4),
        "brier_base": round(base * (1 - base), 4),
        "over_base_upper_95": _upper_bound([((r[3] - r[4]) ** 2 - (base - r[4]) ** 2, r[5], r[6]) for r in rows]),
        "by_confidence": buckets,
        "by_analyst": per,
        "last_unscored": unscored,
    }


def _chance(sel: list[tuple[Any, ...]]) -> float:
    """The hit rate an analyst kind's calls ``sel`` score by chance: each of its agents' (one ticker's, in one
    run) mix of bullish calls b over the share u of its days followed by a rise, b u + (1 - b)(1 - u), weighted
    by its calls. Pooled over tickers, a 10-K analyst bullish every day on the one that rose and bearish on the
    one that fell read as informative: each ticker's calls alone are no call (review)."""
    groups: dict[Any, list[float]] = {}
    for r in sel:  # r[6][:2]: (run, agent with its ticker)
        g = groups.setdefault(r[6][:2], [0, 0.0, 0.0])
        g[0], g[1], g[2] = g[0] + 1, g[1] + (r[1] == "bullish"), g[2] + r[4]
    return round(sum(n / len(sel) * ((b / n) * (u / n) + (1 - b / n) * (1 - u / n)) for n, b, u in groups.values()), 4)


def _called(decisions: list[dict[str, Any]]) -> list[str]:
    """The tickers the analysts called on (a call with nothing to read excepted) in ``decisions``."""
    return [
        str(a.get("agent", "")).split("/")[-1]
        for d in decisions
        for a in (d.get("record") or {}).get("agents") or []
        if a.get("via") != "empty"
    ]


def _what_it_read(a: dict[str, Any]) -> Any:
    """An analyst's call as a judgement: the items it read (each its id and text) and its direction, when
    the record lists them (the rules analyst, reading a filing's decayed weight, was asked afresh each day
    and each day's same call on the same filing counted as a new judgement); else the call itself (a
    record without them). The text counts: the data analyst's indicators keep their ids day after day
    and say something new when it is asked again (by ids alone, 60 of its calls read as 2 judgements)."""
    if not isinstance(a.get("inputs"), list):
        return object()  # never equal: each call not reused is a judgement, as before records listed inputs
    return sorted((str(i.get("id")), str(i.get("text"))) for i in a["inputs"] if isinstance(i, dict)), a.get(
        "direction"
    )


def _scored(k: int, decisions: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The scored calls of run ``k``: (analyst kind, direction, confidence, P(up), up, day, judgement)."""
    rows = []
    judged: dict[str, int] = {}  # each analyst's judgements so far: a report read again unchanged is none
    last: dict[str, Any] = {}  # each analyst's last call: what it read and what it said
    for i, (d, nxt) in enumerate(zip(decisions, decisions[1:])):
        rec, rec2 = d.get("record") or {}, nxt.get("record") or {}
        c0, c1 = rec.get("closes") or {}, rec2.get("closes") or {}
        for a in rec.get("agents") or []:
            if a.get("via") == "empty":  # nothing to read that day: the default "neutral" is no call
                continue
            who = str(a.get("agent", ""))
            said = _what_it_read(a)
            judged[who] = judged.get(who, 0) + (who not in judged or (a.get("via") != "reuse" and said != last[who]))
            last[who] = said
            t = who.split("/")[-1]
            if t not in c0 or t not in c1 or a.get("direction") not in ("bullish", "bearish", "neutral"):
                continue
            up = 1.0 if c1[t] > c0[t] else 0.0
            conf = float(a.get("confidence") or 0.0)
            p = (
                0.5 + conf / 2
                if a["direction"] == "bullish"
                else 0.5 - conf / 2
                if a["direction"] == "bearish"
                else 0.5
            )
            day = d.get("date", (k, i))  # a date two windows share is one day
            rows.append((who.split("/")[0], a["direction"], conf, p, up, day, (k, who, judged[who])))
    return rows


def _upper_bound(scores: list[tuple[float, int, Any]]) -> float | None:
    """One-sided 95 % upper bound of the mean score, its standard error
    clustered two ways (Cameron, Gelbach and Miller): by day, since one day's
    analysts score the same close, and by judgement, since a report read
    again scores its one call on every day it is read; never narrower than
    by day alone. None with fewer than two days (no spread to measure)."""
    n = len(scores)
    mean = sum(s for s, *_ in scores) / n

    def var(key: Any) -> float | None:
        sums: dict[Any, float] = {}
        for row in scores:
            sums[key(row)] = sums.get(key(row), 0.0) + (row[0] - mean)
        k = len(sums)
        return k / (k - 1) * sum(v * v for v in sums.values()) / n**2 if k > 1 else None

    by_day = var(lambda r: r[1])
    if by_day is None:
        return None
    both = (var(lambda r: r[2]) or 0.0) - (var(lambda r: (r[1], r[2])) or 0.0)  # judgement's, less their overlap
    return round(mean + 1.645 * math.sqrt(max(by_day + both, by_day)), 4)
