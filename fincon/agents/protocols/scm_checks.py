"""``scm`` checks in code: the day's context (:class:`Day`: what the roles
and the checks may read, point in time) and the Critic's part that never
trusts a model (:func:`code_checks`: citations, policy limits, quantile
order, the figures' arithmetic, a direction against a strong consensus).

Reads only the day's task, the visible returns and the policies; calls no
model; writes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

from fincon.agents.brains import FULL_SIZE, ManagerTask
from fincon.agents.policies import Policies
from fincon.agents.protocols.scm_schemas import EPS, Alternative, Issue
from fincon.agents.reports import Citation


@dataclass
class Day:
    """What the roles and the code checks read on one day (point in time:
    the task and the visible history only)."""

    task: ManagerTask
    policies: Policies
    citations: dict[str, Citation]  # id -> citation, every id in today's reports
    scores: dict[str, float]  # ticker -> analysts' weighted view in [-1, 1]
    parts: dict[str, list[str]]
    returns: np.ndarray  # days x tickers, finite rows only
    current: dict[str, float]
    optimizer: Any = None  # (tickers, actions) -> weights
    has_evidence: bool = True
    labels: dict[str, str] = field(default_factory=dict)  # real id -> short label

    @property
    def tickers(self) -> tuple[str, ...]:
        return self.task.tickers

    def uncertainty(self, weights: Mapping[str, float]) -> tuple[float, float, float]:
        """P5/P50/P95 (%) of the next day's return of ``weights``: the spread
        of their recent daily returns (centred), widened as the analysts'
        confidence falls; the median: the view-implied return (weight x
        consensus x volatility / 2)."""
        w = np.array([weights.get(t, 0.0) for t in self.tickers])
        if len(self.returns) < 3 or not np.any(np.abs(w) > EPS):
            return 0.0, 0.0, 0.0
        rp = self.returns @ w
        sd = self.returns.std(axis=0)
        s = np.array([self.scores.get(t, 0.0) for t in self.tickers])
        used = np.abs(w) > EPS
        conf = float(np.mean(np.abs(s[used]))) if used.any() else 0.0
        p50 = float(np.sum(w * s * sd) * 0.5)
        c = rp - rp.mean()
        widen = 2.0 - min(1.0, conf)
        lo, hi = min(float(np.quantile(c, 0.05)), 0.0), max(float(np.quantile(c, 0.95)), 0.0)
        return round(100 * (p50 + widen * lo), 3), round(100 * p50, 3), round(100 * (p50 + widen * hi), 3)

    def support(self, weights: Mapping[str, float], n: int = 3) -> list[str]:
        """Ids from the reports that agree with the weights' directions, strongest first."""
        out: list[str] = []
        for t in self.tickers:
            x = weights.get(t, 0.0)
            if abs(x) <= EPS:
                continue
            want = "bullish" if x > 0 else "bearish"
            agree = sorted(
                (r for r in self.task.reports.get(t, ()) if r.direction == want and r.insights),
                key=lambda r: (-self.task.weights.get(r.role, 0.0) * r.confidence, r.role),
            )
            out += [c for r in agree for c in r.cited_ids()[:2]]
        return list(dict.fromkeys(out))[:n]

    def read(self, n: int = 3) -> list[str]:
        """Ids of what the analysts read today (a neutral view's evidence)."""
        return list(
            dict.fromkeys(c for t in self.tickers for r in self.task.reports.get(t, ()) for c in r.cited_ids()[:1])
        )[:n]

    def cite(self, ids: Iterable[str]) -> tuple[list[Citation], list[str]]:
        good, bad = [], []
        for i in dict.fromkeys(ids):
            (good.append(self.citations[i]) if i in self.citations else bad.append(i))
        return good, bad

    def default_risk(self, alt: Alternative) -> str:
        if not alt.trades:
            return "missing a move: the next day's P95 for the traded stocks is not captured"
        return f"a one-day loss of {max(0.0, -alt.p5):.2f}% or worse with 5% probability"


# -- the code checks (the Critic's part that never trusts a model) -------------


def code_checks(alt: Alternative, day: Day, stage: str = "proposal") -> list[Issue]:
    """Citations, policies, quantile order and the figures' arithmetic."""
    out: list[Issue] = []

    def add(category, severity, check, text, question=""):
        out.append(
            Issue(
                alternative=alt.name,
                category=category,
                severity=severity,
                issue=text,
                by="code",
                check=check,
                stage=stage,
                question=question,
            )
        )

    w = alt.weights
    missing = [t for t in day.tickers if t not in w]
    unknown = [t for t in w if t not in day.tickers]
    if missing or unknown or not all(math.isfinite(x) and abs(x) <= 1.0 + EPS for x in w.values()):
        add(
            "consistency",
            "high",
            "arithmetic",
            f"weights must be finite, within [-1, 1], one per stock of "
            f"{', '.join(day.tickers)} (missing {missing or '-'}, unknown {unknown or '-'})",
        )
    gross = sum(abs(x) for x in w.values() if math.isfinite(x))
    if not math.isfinite(alt.gross) or abs(alt.gross - gross) > 0.01:
        add("consistency", "medium", "arithmetic", f"stated gross {alt.gross:.3f} but the weights sum to {gross:.3f}")
    qs = (alt.p5, alt.p50, alt.p95)
    if not all(map(math.isfinite, qs)) or not alt.p5 <= alt.p50 <= alt.p95:
        add("calibration", "high", "quantiles", f"P5 {alt.p5} <= P50 {alt.p50} <= P95 {alt.p95} does not hold")
    elif max(abs(q) for q in qs) > 100:
        add("calibration", "high", "quantiles", "a one-day return beyond 100% is not a calibrated quantile")
    elif alt.trades and alt.p95 - alt.p5 <= EPS:
        add("calibration", "medium", "spread", "a position with no uncertainty (P5 = P95)")
    big = [t for t, x in w.items() if abs(x) > day.policies.max_position + EPS]
    if big:
        add(
            "policy", "high", "max_position", f"{', '.join(big)} above the max position {day.policies.max_position:.2f}"
        )
    if gross > day.policies.max_gross + EPS:
        add("policy", "high", "max_gross", f"gross {gross:.3f} above the max gross {day.policies.max_gross:.2f}")
    if day.policies.require_evidence and not day.has_evidence and alt.trades:
        add("policy", "high", "require_evidence", "a trade on a day when no analyst had anything to read")
    if alt.invalid:
        add("evidence", "high", "citation", f"cites {', '.join(alt.invalid)}, not in today's reports")
    if alt.trades and not alt.evidence:
        add("evidence", "high", "citation", "a trade without a valid citation", "Which report supports this position?")
    for t, x in w.items():
        s = day.scores.get(t, 0.0)
        if abs(s) >= FULL_SIZE and x * s < -EPS:
            add(
                "consistency",
                "medium",
                "direction",
                f"{t} {x:+.2f} against the analysts' view {s:+.2f}",
                f"What outweighs {'; '.join(day.parts.get(t, [])) or 'the reports'}?",
            )
    if alt.trades and not alt.risks:
        add("risks", "medium", "risks", "no risk listed for a trade")
    return out


def code_checks_block(a: Alternative, day: Day) -> list[Issue]:
    """The checks no chosen alternative may fail: a policy, a citation, the quantiles, the weights."""
    return [i for i in code_checks(a, day, "final") if i.severity == "high"]


#: a section counts as said when it holds at least this many words (a rule, a risk)
MIN_WORDS = 3
_PLACEHOLDER = {"none", "n/a", "na", "-", "nothing", "no risk", "no risks", "tbd", "unknown"}


def _words(text: str) -> int:
    return sum(any(ch.isalpha() for ch in w) for w in (text or "").split())


def sections_said(alt: Alternative, day: Day) -> dict[str, bool]:
    """Which of the five sections the alternative actually states, checked
    in code on what was said (the answer schema lets every one of them be
    empty or trivial):

    * evidence: a trade cites at least one id from today's reports and
      nothing else (no view, no trade: nothing to cite);
    * rule: at least :data:`MIN_WORDS` words;
    * figures: one finite weight per ticker and a stated gross that matches them;
    * uncertainty: finite P5 <= P50 <= P95, with a spread for a trade;
    * risks: at least one risk of :data:`MIN_WORDS` words that is not a placeholder.
    """
    w = alt.weights
    figures = (
        set(w) == set(day.tickers)
        and all(math.isfinite(x) for x in w.values())
        and math.isfinite(alt.gross)
        and abs(alt.gross - sum(abs(x) for x in w.values())) <= 0.01
    )
    qs = (alt.p5, alt.p50, alt.p95)
    uncertainty = (
        all(map(math.isfinite, qs)) and alt.p5 <= alt.p50 <= alt.p95 and (not alt.trades or alt.p95 - alt.p5 > EPS)
    )
    risks = any(_words(r) >= MIN_WORDS and r.strip().lower().rstrip(".") not in _PLACEHOLDER for r in alt.risks)
    return {
        "evidence": (bool(alt.evidence) and not alt.invalid) if alt.trades else not alt.invalid,
        "rule": _words(alt.rule) >= MIN_WORDS,
        "figures": figures,
        "uncertainty": uncertainty,
        "risks": risks,
    }


def recheck(issue: Issue, revised: Alternative, day: Day) -> tuple[bool, str]:
    """The rules re-check of a critic's issue on the revised alternative:
    the code checks of the issue's category must pass and the section the
    category is about must be said. Returns (passes, what was found)."""
    found = [j for j in code_checks(revised, day, "revision") if j.category == issue.category]
    said = sections_said(revised, day)
    need = {
        "evidence": "evidence",
        "risks": "risks",
        "calibration": "uncertainty",
        "consistency": "figures",
        "policy": "figures",
    }.get(issue.category, "rule")
    if found:
        return False, "still: " + "; ".join(j.issue for j in found)[:150]
    if not said[need]:
        return False, f"the revision states no usable {need}"
    cites = ", ".join(c.id for c in revised.evidence[:2])
    return True, (f"no {issue.category} fault found on the revision" + (f"; evidence {cites}" if cites else ""))[:160]
