"""The leakage audit's verdict (:mod:`fincon.llm.leakage`): blind, not blind or inconclusive, from the
share of prompts and of days whose firm and day an adversary recovers, with Wilson intervals."""

from __future__ import annotations

from typing import Any, Mapping

from fincon.proportions import wilson

SESSIONS = 5  # "within ±5 sessions"


def share_of(k: int, n: int) -> dict[str, Any]:
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "share": (k / n) if n else None, "wilson_95": [lo, hi] if n else None}


def outcome(fd: Mapping[str, Any], threshold: float, days: Mapping[str, Any] | None = None) -> str:
    """``not blind`` when more than ``threshold`` of the dated prompts give away firm and day, or the
    days' Wilson interval lies above it (6 of 6 days hid under 8 % of a summariser's many prompts);
    ``blind`` when even the Wilson interval's upper end is at or under it, of the prompts and of the
    decision days (``days``: a day is given away when any of its prompts is); else ``inconclusive``;
    ``not audited`` without a dated prompt. One day's prompts are no independent draws (the linker
    gives one's give-away to all quoting it): 0 of 63 prompts over 20 days read "blind" (upper end 6 %)
    where 0 of 20 days reaches 16 %, so the bound is never narrower than by day, as calibration's."""
    if not fd["n"]:
        return "not audited"
    if fd["share"] > threshold or (days and days["k"] and days["wilson_95"][0] > threshold):
        return "not blind"
    upper = max(fd["wilson_95"][1], days["wilson_95"][1] if days and days["n"] else 0.0)
    return "blind" if upper <= threshold else "inconclusive"


def outcome_of(k: int, n: int, threshold: float, k_days: int, n_days: int) -> str:
    """:func:`outcome` from a stored audit's counts (k of n prompts, k_days of n_days days give away)."""
    return outcome(share_of(k, n), threshold, share_of(k_days, n_days))


def to_settle(k: int, n: int, threshold: float, most: int = 100_000) -> int | None:
    """The fewest draws (days, as :func:`verdict` asks) whose Wilson interval would lie at or under
    ``threshold`` if give-aways kept the rate ``k / n``; None when no number up
    to ``most`` would (a rate at or near the threshold, or a threshold of 0)."""
    rate = k / n
    if threshold <= 0 or rate >= threshold:
        return None
    return next((m for m in range(n + 1, most + 1) if wilson(round(rate * m), m)[1] <= threshold), None)


def verdict(overall: Mapping[str, Any], threshold: float) -> str:
    fd, days = overall["firm_and_day"], overall["firm_and_day_days"]
    result = outcome(fd, threshold, days)
    if result == "not audited":
        return "not audited: no dated prompt to attack"
    (lo, hi), (dlo, dhi) = fd["wilson_95"], days["wilson_95"]
    cues = ", ".join(f"{c} {n}" for c, n in sorted(overall["cues"].items(), key=lambda x: -x[1])) or "none"
    what = (
        f"{fd['k']} of {fd['n']} prompts ({fd['share']:.0%}, Wilson 95 % {lo:.0%}-{hi:.0%}) give away firm and day "
        f"(within {SESSIONS} sessions), on {days['k']} of {days['n']} days (Wilson 95 % {dlo:.0%}-{dhi:.0%}: a day's "
        f"prompts give it away together, so the bound is never narrower than by day); cues: {cues}"
    )
    if result == "not blind":
        return f"not blind: {what} (threshold {threshold:.0%})"
    if result == "blind":
        return f"blind by this audit: {what} (threshold {threshold:.0%})"
    need = to_settle(days["k"], days["n"], threshold)
    more = f"about {need} days at this rate would" if need else "at this rate no practical number of days would"
    return (
        f"inconclusive: {what}; the interval reaches above the threshold {threshold:.0%}, so these prompts "
        f"cannot show the mask holds ({more}: audit a longer run)"
    )
