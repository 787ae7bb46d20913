"""``scm`` rules roles: the deterministic Strategist, Critic, fix and
Moderator (the rules brain, and the counted fallback of the llm brain when a
model answer is invalid twice).

Pure functions of the day's context (:class:`~fincon.agents.protocols.scm_checks.Day`)
and the slate; no model call, nothing written.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from fincon.agents.brains import FULL_SIZE, NEUTRAL_BAND
from fincon.agents.protocols.scm_checks import Day, recheck
from fincon.agents.protocols.scm_schemas import NAMES, Alternative, Critique, Issue, Proposal, Verdict


def _alt(day: Day, name: str, weights: dict[str, float], rule: str, evidence: list[str]) -> Alternative:
    weights = {t: round(float(weights.get(t, 0.0)), 6) for t in day.tickers}
    good, _ = day.cite(evidence)
    a = Alternative(
        name=name, evidence=good, rule=rule, weights=weights, gross=round(sum(abs(x) for x in weights.values()), 6)
    )
    a.p5, a.p50, a.p95 = day.uncertainty(weights)
    a.risks = [day.default_risk(a)]
    dissent = [
        f"{t} {r.role} {r.direction}"
        for t in day.tickers
        for r in day.task.reports.get(t, ())
        if weights[t] and r.direction == ("bearish" if weights[t] > 0 else "bullish")
    ]
    if dissent:
        a.risks.append(("dissent: " + ", ".join(dissent))[:100])
    return a


def rules_strategist(day: Day) -> Proposal:
    """Consensus at full / half / zero size, the size the consensus supports first."""
    task, tk = day.task, day.tickers
    actions = {
        t: "buy" if day.scores[t] > NEUTRAL_BAND else "sell" if day.scores[t] < -NEUTRAL_BAND else "hold" for t in tk
    }

    def said(t):
        loud = [x for x in day.parts[t] if " neutral " not in x]
        quiet = len(day.parts[t]) - len(loud)
        return ", ".join(loud + ([f"{quiet} neutral"] if quiet else [])) or "no evidence"

    view = "; ".join(f"{t} {day.scores[t]:+.2f} ({said(t)}) -> {actions[t]}" for t in tk)
    if task.portfolio and day.optimizer is not None:
        full = day.optimizer(tk, actions)
    else:
        full = {t: {"buy": 1.0, "sell": -1.0, "hold": 0.0}[actions[t]] for t in tk}
    full = {t: x * task.exposure for t, x in full.items()}
    ev = day.support(full)
    alts: list[tuple[str, dict[str, float], str]] = []
    if any(a != "hold" for a in actions.values()):
        strong = float(np.mean([abs(day.scores[t]) for t in tk])) >= FULL_SIZE
        sized = [
            ("full", full, f"weighted analyst view {view}: full size"),
            (
                "half",
                {t: x / 2 for t, x in full.items()},
                f"weighted analyst view {view}: half size, the view is moderate",
            ),
        ]
        alts += sized if strong else sized[::-1]
    else:
        # a CVaR alert keeps at most the day's cut exposure (kept whole, the alert was a no-op)
        keep = {t: float(np.clip(day.current.get(t, 0.0), -task.exposure, task.exposure)) for t in tk}
        alts.append(("keep", keep, f"no clear view ({view}): keep the current position"))
    alts.append(("flat", {t: 0.0 for t in tk}, "stay out of the market: no position until the evidence is stronger"))
    out, seen = [], set()
    for kind, w, rule in alts:
        cites = [] if kind == "flat" else ev if kind != "keep" else (day.support(w) or day.read())
        a = _alt(day, NAMES[len(out)] if len(out) < 3 else "C", w, rule[:160], cites)
        if a.key() not in seen and len(out) < 3:
            seen.add(a.key())
            out.append(a)
    if task.exposure < 1.0:  # the alert first: a long rule cut at 160 characters lost it
        for a in out:
            a.rule = f"risk alert: exposure cut to {task.exposure:.0%}; {a.rule}"[:160]
    return Proposal(alternatives=out)


def rules_critic(slate: Sequence[Alternative], day: Day) -> Critique:
    """The rules Critic raises nothing beyond the code checks (run for every critic)."""
    return Critique(issues=[])


def rules_fix(slate: Sequence[Alternative], issues: Sequence[Issue], day: Day) -> Proposal:
    """Deterministic repairs of the high and medium issues: weights clipped to
    the policies, figures and uncertainty recomputed, quantiles ordered,
    supporting ids and a risk added. A direction against the analysts stays
    (changing it would be another alternative)."""
    out = []
    for a in slate:
        mine = [i for i in issues if i.alternative == a.name and i.severity in ("high", "medium")]
        if not mine:
            out.append(a)
            continue
        b = a.model_copy(deep=True)
        checks = {i.check for i in mine} | {i.category for i in mine}
        w = {t: float(b.weights.get(t, 0.0)) if math.isfinite(b.weights.get(t, 0.0)) else 0.0 for t in day.tickers}
        w = {t: max(-1.0, min(1.0, x)) for t, x in w.items()}
        if "require_evidence" in checks:
            w = {t: 0.0 for t in w}
        p = day.policies
        w = {t: max(-p.max_position, min(p.max_position, x)) for t, x in w.items()}
        g = sum(abs(x) for x in w.values())
        if g > p.max_gross:
            w = {t: x * p.max_gross / g for t, x in w.items()}
        w = {t: round(x, 6) for t, x in w.items()}
        changed_w = w != b.weights
        b.weights, b.gross = w, round(sum(abs(x) for x in w.values()), 6)
        if changed_w or checks & {"quantiles", "spread", "calibration"}:
            b.p5, b.p50, b.p95 = day.uncertainty(w)
            if not b.p5 <= b.p50 <= b.p95:
                b.p5, b.p50, b.p95 = sorted((b.p5, b.p50, b.p95))
        if b.invalid:
            b.invalid = []
        if b.trades and not b.evidence:
            b.evidence, _ = day.cite(day.support(w))
        if b.trades and (not b.risks or changed_w):
            b.risks = [day.default_risk(b)] + b.risks[1:]
        out.append(b)
    return Proposal(alternatives=out)


def rules_moderator(survivors: Sequence[Alternative]) -> Verdict:
    if not survivors:
        return Verdict(choice="none", rationale="no alternative survived the critique: hold")
    best = max(survivors, key=lambda a: a.concordance)  # the slate's order breaks ties
    others = ", ".join(f"{a.name} {a.concordance:.2f}" for a in survivors if a is not best)
    return Verdict(
        choice=best.name,
        rationale=f"{best.name} has the samples' broadest agreement "
        f"({best.concordance:.2f}{'; ' + others if others else ''}) and passes every check",
        relied_on=[c.id for c in best.evidence][:3],
    )


def rules_verify(issues: Sequence[Issue], revised: dict[str, Alternative], day: Day) -> list[tuple[bool, str]]:
    """The rules verifier: each critic issue re-checked in code on its
    revised alternative (:func:`~fincon.agents.protocols.scm_checks.recheck`)."""
    return [recheck(i, revised[i.alternative], day) for i in issues]
