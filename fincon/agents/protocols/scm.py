"""``scm``: Strategist, Critic, Moderator (the paper "Prompt Engineering in
Finance: an LLM-based multi-agent architecture for decision support", 3.1-3.5).

One day, after the analysts have reported:

1. **Strategist** x ``samples`` (self-consistency: a temperature above 0, a
   different seed per sample): 2-3 alternatives, preferred first, each as
   evidence (ids from the analysts' reports; the record keeps their dates) ->
   rule -> figures (a signed target weight per ticker and the gross) ->
   uncertainty (P5/P50/P95 of the next day's return, %) -> risks.
   The samples' alternatives are pooled, deduplicated by weights and ranked
   by *concordance*: closeness to the samples' consensus (the per-ticker
   median of every sample's preferred weights). The top three form the
   day's slate A, B, C.
2. **Critic**: issues per alternative, each with a category (evidence,
   policy, consistency, calibration, risks), a severity and a verification
   question. The code checks (:func:`code_checks`: citations, policy limits,
   P5 <= P50 <= P95, arithmetic of the figures) always run and join the list.
3. **Strategist fixes** the high and medium issues (one revision round);
   the code checks run again on the revision.
4. **Moderator**: discards (in code) every alternative with a high issue
   still open after the revision (a model critic's issue counts as open when
   the alternative was not revised) or with a violated policy; the model
   moderator may discard more and chooses among the survivors; a choice
   outside them is overridden by the most concordant survivor (counted).
   Nothing survives: hold, positions kept (counted). The decision log says
   what was discarded and why.

Every role has a deterministic rules version (the rules brain, and the
counted fallback of the llm brain): alternatives from the analysts'
consensus at full / half / zero size (portfolio: weights from FinCon's
sign-constrained optimizer), P5/P50/P95 from the recent returns of those
weights widened as confidence falls; critic = the code checks; fix = clip
to the policies, recompute figures, add supporting ids and a risk;
moderator = the most concordant survivor.

The run's policies are checked here (an alternative breaking one is never
chosen) and enforced again by the team after the protocol.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, create_model

from fincon.agents.brains import FULL_SIZE, NEUTRAL_BAND, Answer, ManagerTask, Question, consensus
from fincon.agents.policies import Policies
from fincon.agents.reports import Citation, _field, _real, short_labels
from fincon.agents.roles.base import load_template
from fincon.strategies.base import Decision

HERE = Path(__file__).parent
TEMPLATES = {role: HERE / f"scm.{role}.txt" for role in ("strategist", "critic", "fix", "moderator")}
NAMES = ("A", "B", "C")
CATEGORIES = ("evidence", "policy", "consistency", "calibration", "risks")
SEVERITIES = ("high", "medium", "low")
#: the Strategist's sampling temperature when samples > 1 (at least this)
SAMPLE_TEMPERATURE = 0.7
EPS = 1e-9
REPORT_CHARS = 120

Name = Literal["A", "B", "C"]
Category = Literal["evidence", "policy", "consistency", "calibration", "risks"]
Severity = Literal["high", "medium", "low"]


# -- what the model fills -------------------------------------------------------


class _AltBase(BaseModel):
    name: Name
    evidence: list[str] = Field(default_factory=list, max_length=3, examples=[["E1"]])
    rule: str = Field(min_length=1, max_length=160)
    #: no bounds in the answer schema: a model that states a negative gross for a short
    #: (the bundled 1.5B did, live) makes an arithmetic error that the code check
    #: ("stated gross ... but the weights sum to ...") flags and the fix round repairs,
    #: as the protocol intends, instead of a schema error that throws the whole sample away
    gross: float = Field(description="sum of the absolute weights")
    p5: float = Field(description="5th percentile of the next day's return, %")
    p50: float = Field(description="median of the next day's return, %")
    p95: float = Field(description="95th percentile of the next day's return, %")
    risks: list[str] = Field(default_factory=list, max_length=2)

    def target(self) -> dict[str, float]:
        w = self.weights
        return {f.alias: float(getattr(w, n)) for n, f in type(w).model_fields.items() if f.alias}


class _ProposalBase(BaseModel):
    def cited(self) -> Iterable[str]:
        return (c for a in self.alternatives for c in a.evidence)

    def relabeled(self, back: Mapping[str, str]):
        return self.model_copy(
            update={
                "alternatives": [a.model_copy(update={"evidence": _real(a.evidence, back)}) for a in self.alternatives]
            }
        )


@lru_cache(maxsize=64)
def proposal_model(tickers: tuple[str, ...]) -> type[_ProposalBase]:
    """Strategist (and fix) answer: 2-3 alternatives, one weight property per ticker."""
    weights = create_model("Weights", **{_field(t): (float, Field(alias=t, ge=-1.0, le=1.0)) for t in tickers})
    alt = create_model("Alternative", __base__=_AltBase, weights=(weights, ...))
    return create_model("Proposal", __base__=_ProposalBase, alternatives=(list[alt], Field(min_length=2, max_length=3)))


class IssueAnswer(BaseModel):
    alternative: Name
    category: Category
    severity: Severity
    issue: str = Field(min_length=1, max_length=100)
    question: str = Field(min_length=1, max_length=100, description="a verification question the reports answer")


class CritiqueAnswer(BaseModel):
    #: three short issues fit the team's 320-token answer cap (six long ones were cut
    #: off mid-string in a live 1.5B run: invalid JSON twice, a counted fallback);
    #: the code checks add their own issues beside the Critic's
    issues: list[IssueAnswer] = Field(default_factory=list, max_length=3)

    def cited(self) -> Iterable[str]:
        return iter(())

    def relabeled(self, back: Mapping[str, str]):
        return self


class DiscardAnswer(BaseModel):
    alternative: Name
    reason: str = Field(min_length=1, max_length=140)


class ModeratorAnswer(BaseModel):
    discard: list[DiscardAnswer] = Field(default_factory=list, max_length=3)
    choice: Literal["A", "B", "C", "none"]
    rationale: str = Field(min_length=1, max_length=240)
    relied_on: list[str] = Field(default_factory=list, max_length=3)

    def cited(self) -> Iterable[str]:
        return iter(self.relied_on)

    def relabeled(self, back: Mapping[str, str]):
        return self.model_copy(update={"relied_on": _real(self.relied_on, back)})


# -- what the protocol keeps ---------------------------------------------------


class Alternative(BaseModel):
    """One decision option, the five sections plus where it came from."""

    model_config = ConfigDict(extra="forbid")

    name: str
    evidence: list[Citation] = Field(default_factory=list)
    #: cited ids that were not in the day's reports (kept to be criticised, never traded on)
    invalid: list[str] = Field(default_factory=list)
    rule: str = ""
    weights: dict[str, float] = Field(default_factory=dict)
    gross: float = 0.0
    p5: float = 0.0
    p50: float = 0.0
    p95: float = 0.0
    risks: list[str] = Field(default_factory=list)
    origin: list[str] = Field(default_factory=list)  # "s<sample>.<name>" it was proposed as
    concordance: float = 0.0

    @property
    def trades(self) -> bool:
        return any(abs(x) > EPS for x in self.weights.values())

    def key(self) -> tuple:
        return tuple(sorted((t, round(x, 3)) for t, x in self.weights.items()))

    def sections(self) -> dict[str, bool]:
        return {
            "evidence": bool(self.evidence) or not self.trades,
            "rule": bool(self.rule.strip()),
            "figures": bool(self.weights),
            "uncertainty": all(map(math.isfinite, (self.p5, self.p50, self.p95))),
            "risks": bool(self.risks),
        }

    def brief(self, label: Mapping[str, str] | None = None) -> str:
        label = label or {}
        w = ", ".join(f"{t} {x:+.2f}" for t, x in self.weights.items())
        ev = ", ".join(label.get(c.id, c.id) for c in self.evidence) + (
            (", " if self.evidence else "") + ", ".join(self.invalid) if self.invalid else ""
        )
        return (
            f"{self.name}: weights {w} (gross {self.gross:.2f}); P5 {self.p5:+.2f}% P50 {self.p50:+.2f}% "
            f"P95 {self.p95:+.2f}%; evidence {ev or 'none'}; rule: {self.rule}; "
            f"risks: {'; '.join(self.risks) or 'none'}"
        )


class Proposal(BaseModel):
    alternatives: list[Alternative]


class Issue(BaseModel):
    model_config = ConfigDict(extra="forbid")

    alternative: str
    category: str
    severity: str
    issue: str
    question: str = ""
    by: str = "code"  # code | critic
    check: str = ""  # the code check that found it
    stage: str = "proposal"  # proposal | revision
    status: str = "open"  # open | fixed | unresolved | noted


class Critique(BaseModel):
    issues: list[Issue] = Field(default_factory=list)


class Verdict(BaseModel):
    discard: list[dict[str, str]] = Field(default_factory=list)
    choice: str = "none"
    rationale: str = ""
    relied_on: list[str] = Field(default_factory=list)


class ScmReport(BaseModel):
    """The day's final report (what a :class:`Reuse` brain gives back) and its log."""

    model_config = ConfigDict(extra="forbid")

    actions: dict[str, str]
    weights: dict[str, float] = Field(default_factory=dict)  # empty: hold, positions kept
    held: bool = False
    chosen: str | None = None
    rationale: str = ""
    relied_on: list[str] = Field(default_factory=list)
    p5: float = 0.0
    p50: float = 0.0
    p95: float = 0.0
    proposals: list[dict[str, Any]] = Field(default_factory=list)
    alternatives: list[dict[str, Any]] = Field(default_factory=list)
    critiques: list[dict[str, Any]] = Field(default_factory=list)
    fixes: list[dict[str, Any]] = Field(default_factory=list)
    log: list[dict[str, Any]] = Field(default_factory=list)
    stable: bool = True
    steps: dict[str, str] = Field(default_factory=dict)  # role -> via


# -- the day's context ---------------------------------------------------------


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


def _fmt_policies(p: Policies) -> str:
    return f"largest |weight| of one stock {p.max_position:.2f}, largest gross exposure {p.max_gross:.2f}" + (
        "; no new trade on a day without evidence" if p.require_evidence else ""
    )


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


# -- the rules version of each role -------------------------------------------


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
        alts.append(
            ("keep", {t: day.current.get(t, 0.0) for t in tk}, f"no clear view ({view}): keep the current position")
        )
    alts.append(("flat", {t: 0.0 for t in tk}, "stay out of the market: no position until the evidence is stronger"))
    out, seen = [], set()
    for kind, w, rule in alts:
        cites = [] if kind == "flat" else ev if kind != "keep" else (day.support(w) or day.read())
        a = _alt(day, NAMES[len(out)] if len(out) < 3 else "C", w, rule[:160], cites)
        if a.key() not in seen and len(out) < 3:
            seen.add(a.key())
            out.append(a)
    if task.exposure < 1.0:
        for a in out:
            a.rule = (a.rule + f"; risk alert: exposure cut to {task.exposure:.0%}")[:160]
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


# -- the protocol --------------------------------------------------------------


def _template(role: str, values: Mapping[str, str]) -> list[dict[str, str]]:
    system, user = load_template(str(TEMPLATES[role]))
    return [{"role": "system", "content": system.format(**values)}, {"role": "user", "content": user.format(**values)}]


def _sign(weights: Mapping[str, float], tickers: Sequence[str]) -> tuple[int, ...]:
    return tuple(int(np.sign(round(weights.get(t, 0.0), 6))) for t in tickers)


class ScmProtocol:
    name = "scm"
    agent = "manager"

    def __init__(
        self,
        samples: int = 3,
        policies: Policies | None = None,
        lookback: int = 60,
        temperature: float = SAMPLE_TEMPERATURE,
        mu_shrinkage: float = 0.5,
        risk_aversion: float = 1.0,
    ):
        from fincon.agents.protocols.fincon import FinConManager

        self.sampling = None
        self.samples = samples
        self.policies = policies or Policies()
        self.lookback = lookback
        self.temperature = temperature
        self._sizer = FinConManager(lookback, mu_shrinkage, risk_aversion)
        self.team = None
        self.totals: dict[str, Any] = {
            k: 0
            for k in (
                "days",
                "reused",
                "proposed",
                "claims",
                "cited",
                "complete",
                "sections",
                "calibration",
                "arithmetic",
                "policy",
                "high",
                "medium",
                "low",
                "fixed",
                "unresolved",
                "discarded",
                "holds",
                "stable",
                "overrides",
                "fallbacks",
                "calls",
            )
        }

    @classmethod
    def from_params(cls, params) -> "ScmProtocol":
        return cls(samples=params.samples, policies=params.policies, lookback=params.lookback)

    def bind(self, team) -> None:
        self.team = team

    # -- the day's context ---------------------------------------------------
    def context(self, task: ManagerTask, view) -> Day:
        tk = task.tickers
        cites = {c.id: c for t in tk for r in task.reports.get(t, ()) for i in r.insights for c in i.citations}
        scores, parts = {}, {}
        for t in tk:
            scores[t], parts[t] = consensus(task, t)
        closes = view.closes(self.lookback + 1)[list(tk)].to_numpy(dtype=float)
        rets = closes[1:] / closes[:-1] - 1.0
        rets = rets[np.all(np.isfinite(rets), axis=1)]
        held = getattr(getattr(view, "portfolio", None), "weights", {}) or {}
        current = {t: round(float(held.get(t, 0.0)), 6) for t in tk}
        return Day(
            task=task,
            policies=self.policies,
            citations=cites,
            scores=scores,
            parts=parts,
            returns=rets,
            current=current,
            optimizer=lambda t, a: self._sizer.weights(view, t, a),
            has_evidence=any(r.insights for t in tk for r in task.reports.get(t, ())),
            labels=short_labels(task.cited()),
        )

    def _prompt_values(self, day: Day) -> dict[str, str]:
        task, lab = day.task, day.labels
        lines = []
        for t in task.tickers:
            for r in task.reports.get(t, ()):
                if not r.insights:
                    continue
                body = " ".join(
                    f"{i.text[:REPORT_CHARS]} [{', '.join(lab.get(c.id, c.id) for c in i.citations)}]"
                    for i in r.insights[: 1 if task.portfolio else 2]
                )
                lines.append(f"- {t} {r.role}: {r.direction} (confidence {r.confidence:.2f}). {body}")
        evidence = "; ".join(f"{lab.get(c.id, c.id)} = {c.source} {c.date}" for c in day.citations.values())
        rets = []
        for j, t in enumerate(task.tickers):
            r = day.returns[:, j] if len(day.returns) else np.zeros(1)
            rets.append(
                f"{t}: mean {100 * r.mean():+.2f}%, P5 {100 * np.quantile(r, 0.05):+.2f}%, "
                f"P95 {100 * np.quantile(r, 0.95):+.2f}%"
            )
        return {
            "date": task.day,
            "tickers": ", ".join(task.tickers),
            "policies": _fmt_policies(self.policies),
            "position": ", ".join(f"{t} {day.current.get(t, 0.0):+.2f}" for t in task.tickers),
            "reports": "\n".join(lines) or "(no reports)",
            "evidence": evidence or "(none)",
            "returns": "\n".join(rets),
            "lookback": str(len(day.returns)),
            "reflections": "\n".join(f"- {r}" for r in task.reflections) or "(none yet)",
            "stance": task.stance or "(none)",
            "beliefs": task.beliefs or "(none yet)",
        }

    def _to_alts(self, ans, day: Day, sample: str | None) -> Proposal:
        """A model's alternatives; a sample's are renamed by position, a revision keeps its names."""
        out = []
        for n, a in enumerate(ans.alternatives[:3]):
            good, bad = day.cite(a.evidence)
            name = NAMES[n] if sample else a.name
            out.append(
                Alternative(
                    name=name,
                    evidence=good,
                    invalid=bad,
                    rule=a.rule,
                    weights=a.target(),
                    gross=a.gross,
                    p5=a.p5,
                    p50=a.p50,
                    p95=a.p95,
                    risks=list(a.risks),
                    origin=[f"{sample}.{name}"] if sample else [],
                )
            )
        return Proposal(alternatives=out)

    def _q(self, role: str, day: Day, model, messages, to_report, rules, params=None, cites=False) -> Question:
        allowed = frozenset(day.citations) if cites else frozenset()
        labels = {v: k for k, v in day.labels.items()} if cites else {}
        return Question(
            agent=f"{self.agent}/scm-{role}",
            day=day.task.day,
            messages=messages,
            model=model,
            allowed=allowed,
            to_report=to_report,
            rules=rules,
            params=params,
            labels=labels,
        )

    def _sample_params(self, brain, k: int):
        if self.samples <= 1:
            return self.sampling
        base = self.sampling or getattr(getattr(brain, "client", None), "params", None)
        if base is None:
            from fincon.llm.types import SamplingParams

            base = SamplingParams()
        return base.model_copy(update={"temperature": max(base.temperature, self.temperature), "seed": base.seed + k})

    # -- the day -------------------------------------------------------------
    def decide(
        self, brain, task: ManagerTask, view, universe: tuple[str, ...]
    ) -> tuple[Decision, Answer, dict[str, Any]]:
        from fincon.agents.brains import Reuse

        if isinstance(brain, Reuse):
            self.totals["reused"] += 1
            rep: ScmReport = brain.report
            return self._decision(rep, universe), Answer(rep, "reuse"), {**rep.model_dump(), "reused": True}
        day = self.context(task, view)
        values = self._prompt_values(day)
        answers: list[Answer] = []
        steps: dict[str, str] = {}
        log: list[dict[str, Any]] = []

        def ask(q: Question, step: str) -> Answer:
            a = brain.answer(q)
            answers.append(a)
            steps[step] = a.via
            self.totals["fallbacks"] += a.via == "fallback"
            if a.via == "fallback":
                log.append(
                    {
                        "step": step,
                        "agent": q.agent,
                        "action": "fallback",
                        "details": "model answer invalid twice: the rules version answered",
                    }
                )
            return a

        # T0: the Strategist, `samples` times
        pmodel = proposal_model(task.tickers)
        s_msgs = lambda: _template("strategist", values)  # noqa: E731
        qs = [
            self._q(
                "strategist",
                day,
                pmodel,
                s_msgs,
                lambda a, k=k: self._to_alts(a, day, f"s{k}"),
                lambda k=k: self._tag(rules_strategist(day), f"s{k}"),
                params=self._sample_params(brain, k),
                cites=True,
            )
            for k in range(self.samples)
        ]
        conc = getattr(self.team, "concurrency", 1) if self.team is not None else 1
        from fincon.llm.concurrency import run_concurrently

        got = (
            run_concurrently([lambda q=q: brain.answer(q) for q in qs], conc)
            if conc > 1
            else [brain.answer(q) for q in qs]
        )
        proposals = []
        for k, a in enumerate(got):
            answers.append(a)
            steps[f"strategist.s{k}"] = a.via
            self.totals["fallbacks"] += a.via == "fallback"
            if a.via == "fallback":
                log.append(
                    {
                        "step": "T0",
                        "agent": "strategist",
                        "action": "fallback",
                        "details": f"sample {k}: model answer invalid twice, the rules strategist answered",
                    }
                )
            proposals.append(a.report.alternatives)
        slate, stable = self._slate(proposals, day)
        self._measure(proposals, day)
        log.append(
            {
                "step": "T0",
                "agent": "strategist",
                "action": "proposed",
                "details": f"{sum(map(len, proposals))} alternatives in {len(proposals)} sample(s); slate "
                + ", ".join(f"{a.name} (concordance {a.concordance:.2f}, from {'/'.join(a.origin)})" for a in slate)
                + ("" if stable else "; the samples disagree on the direction"),
            }
        )

        # T1: the Critic (the code checks always, the model's issues on top)
        slate_txt = "\n".join(a.brief(day.labels) for a in slate)
        names = {a.name for a in slate}
        code = [i for a in slate for i in code_checks(a, day)]
        c_vals = {
            **values,
            "alternatives": slate_txt,
            "checks": "\n".join(f"- {i.alternative} {i.severity} {i.category}: {i.issue}" for i in code) or "(none)",
        }
        crit = ask(
            self._q(
                "critic",
                day,
                CritiqueAnswer,
                lambda: _template("critic", c_vals),
                lambda a: Critique(issues=[Issue(**i.model_dump(), by="critic") for i in a.issues]),
                lambda: rules_critic(slate, day),
                params=self.sampling,
            ),
            "critic",
        )
        issues = code + [i for i in crit.report.issues if i.alternative in names]
        for i in issues:
            self.totals[i.severity] += 1
        log.append(
            {
                "step": "T1",
                "agent": "critic",
                "action": "reviewed",
                "details": f"{len(issues)} issue(s): "
                + ", ".join(
                    f"{a}: " + "/".join(f"{i.severity} {i.category}" for i in issues if i.alternative == a)
                    for a in sorted(names)
                    if any(i.alternative == a for i in issues)
                )
                if issues
                else "no issue",
            }
        )

        # T2: the Strategist fixes the high and medium issues (one round)
        todo = [i for i in issues if i.severity in ("high", "medium")]
        fixes: list[dict[str, Any]] = []
        revised = slate
        if todo:
            f_vals = {
                **c_vals,
                "issues": "\n".join(f"- {i.alternative} {i.severity} {i.category}: {i.issue}" for i in todo),
            }
            fix = ask(
                self._q(
                    "fix",
                    day,
                    pmodel,
                    lambda: _template("fix", f_vals),
                    lambda a: self._to_alts(a, day, None),
                    lambda: rules_fix(slate, todo, day),
                    params=self.sampling,
                    cites=True,
                ),
                "fix",
            )
            by_name = {a.name: a for a in fix.report.alternatives}
            revised = []
            for a in slate:
                b = by_name.get(a.name, a).model_copy(update={"origin": a.origin, "concordance": a.concordance})
                revised.append(b)
                if b.model_dump(exclude={"origin", "concordance"}) != a.model_dump(exclude={"origin", "concordance"}):
                    fixes.append({"alternative": a.name, "before": a.brief(), "after": b.brief()})
            for b in revised:
                b.concordance = self._concordance(b, self._consensus)
        # the code checks again, on the revision; an issue is fixed when its check passes
        # (a model critic's issue: when the alternative was revised)
        recheck = {a.name: code_checks(a, day, "revision") for a in revised}
        changed = {f["alternative"] for f in fixes}
        for i in issues:
            if i.severity == "low":
                i.status = "noted"
            elif i.by == "code":
                still = any(j.check == i.check and j.category == i.category for j in recheck[i.alternative])
                i.status = "unresolved" if still else "fixed"
            else:
                i.status = "fixed" if i.alternative in changed else "unresolved"
        new = [
            j
            for a in revised
            for j in recheck[a.name]
            if not any(i.by == "code" and i.alternative == j.alternative and i.check == j.check for i in issues)
        ]
        for j in new:
            j.status = "unresolved" if j.severity != "low" else "noted"
        issues += new
        self.totals["fixed"] += sum(i.status == "fixed" for i in issues)
        self.totals["unresolved"] += sum(i.status == "unresolved" for i in issues)
        if todo:
            log.append(
                {
                    "step": "T2",
                    "agent": "strategist",
                    "action": "revised",
                    "details": f"{len(fixes)} alternative(s) revised; "
                    f"{sum(i.status == 'fixed' for i in issues)} issue(s) fixed, "
                    f"{sum(i.status == 'unresolved' for i in issues)} unresolved",
                }
            )

        # T3: the Moderator: discards in code, then the choice
        discarded: dict[str, str] = {}
        for a in revised:
            high = [i for i in issues if i.alternative == a.name and i.severity == "high" and i.status != "fixed"]
            if high:
                discarded[a.name] = "unresolved high issue: " + "; ".join(f"{i.category}: {i.issue}" for i in high)
        for a in revised:  # belt and braces: nothing failing a blocking check in code survives
            block = code_checks_block(a, day)
            if block and a.name not in discarded:
                discarded[a.name] = "code check: " + "; ".join(i.issue for i in block)
        survivors = [a for a in revised if a.name not in discarded]
        verdict = Verdict(choice="none", rationale="no alternative survived the critique: hold")
        if survivors:
            m_vals = {
                **values,
                "alternatives": "\n".join(
                    a.brief(day.labels) + f"; agreement across samples {a.concordance:.2f}" for a in survivors
                ),
                "issues": "\n".join(
                    f"- {i.alternative} {i.severity} {i.category} ({i.status}): {i.issue}"
                    for i in issues
                    if i.alternative in {a.name for a in survivors}
                )
                or "(none)",
                "discarded": "; ".join(f"{k}: {v}" for k, v in discarded.items()) or "(none)",
            }
            mod = ask(
                self._q(
                    "moderator",
                    day,
                    ModeratorAnswer,
                    lambda: _template("moderator", m_vals),
                    lambda a: Verdict(
                        discard=[d.model_dump() for d in a.discard],
                        choice=a.choice,
                        rationale=a.rationale,
                        relied_on=list(a.relied_on),
                    ),
                    lambda: rules_moderator(survivors),
                    params=self.sampling,
                    cites=True,
                ),
                "moderator",
            )
            verdict = mod.report
            for d in verdict.discard:
                if d.get("alternative") in {a.name for a in survivors}:
                    discarded[d["alternative"]] = "moderator: " + d.get("reason", "")
            survivors = [a for a in survivors if a.name not in discarded]
        for name, why in discarded.items():
            log.append({"step": "T3", "agent": "moderator", "action": "discarded", "details": f"{name}: {why}"[:400]})
        self.totals["discarded"] += len(discarded)
        chosen = next((a for a in survivors if a.name == verdict.choice), None)
        if chosen is None and survivors:
            chosen = rules_moderator(survivors).choice
            chosen = next(a for a in survivors if a.name == chosen)
            self.totals["overrides"] += 1
            log.append(
                {
                    "step": "T3",
                    "agent": "moderator",
                    "action": "overridden",
                    "details": f"choice {verdict.choice!r} is not a surviving alternative; "
                    f"{chosen.name}, the most concordant survivor, taken",
                }
            )
        self.totals["days"] += 1
        self.totals["stable"] += stable
        self.totals["calls"] += sum(a.calls for a in answers)

        # the decision, checked once more in code
        tk = task.tickers
        if chosen is None:
            self.totals["holds"] += 1
            log.append(
                {"step": "T3", "agent": "moderator", "action": "hold", "details": "nothing survived: positions kept"}
            )
            report = ScmReport(
                actions={t: "hold" for t in tk},
                held=True,
                rationale=("scm hold: " + "; ".join(f"{k} {v}" for k, v in discarded.items()))[:600],
            )
        else:
            relied = [c.id for c in chosen.evidence] + [i for i in verdict.relied_on if i in day.citations]
            acts = {t: "buy" if x > EPS else "sell" if x < -EPS else "hold" for t, x in chosen.weights.items()}
            log.append(
                {
                    "step": "T3",
                    "agent": "moderator",
                    "action": "chose",
                    "details": f"{chosen.name}: {verdict.rationale}"[:400],
                }
            )
            report = ScmReport(
                actions=acts,
                weights=dict(chosen.weights),
                chosen=chosen.name,
                rationale=f"scm {chosen.name}: {chosen.rule} | moderator: {verdict.rationale}"[:600],
                relied_on=list(dict.fromkeys(relied))[:5],
                p5=chosen.p5,
                p50=chosen.p50,
                p95=chosen.p95,
            )
        report.proposals = []
        for k, p in enumerate(proposals):  # a sample identical to the first (the rules brain) is not repeated
            same = k > 0 and [a.key() + (a.rule, a.p50) for a in p] == [a.key() + (a.rule, a.p50) for a in proposals[0]]
            report.proposals.append(
                {
                    "sample": k,
                    "via": got[k].via,
                    **(
                        {"same_as": 0} if same else {"alternatives": [a.model_dump(exclude={"concordance"}) for a in p]}
                    ),
                }
            )
        report.alternatives = [
            {
                **a.model_dump(),
                "status": "chosen"
                if chosen is not None and a.name == chosen.name
                else "discarded"
                if a.name in discarded
                else "kept",
                **({"discarded_because": discarded[a.name]} if a.name in discarded else {}),
            }
            for a in revised
        ]
        report.critiques = [i.model_dump() for i in issues]
        report.fixes = fixes
        report.log = log
        report.stable = stable
        report.steps = steps
        via = (
            "rules"
            if all(a.via == "rules" for a in answers)
            else "fallback"
            if any(a.via == "fallback" for a in answers)
            else "llm"
        )
        ans = Answer(
            report,
            via,
            sum(a.calls for a in answers),
            tuple(k for a in answers for k in a.keys),
            tuple(e for a in answers for e in a.errors),
        )
        return self._decision(report, universe), ans, report.model_dump()

    @staticmethod
    def _tag(p: Proposal, sample: str) -> Proposal:
        return Proposal(alternatives=[a.model_copy(update={"origin": [f"{sample}.{a.name}"]}) for a in p.alternatives])

    @staticmethod
    def _decision(rep: ScmReport, universe: Sequence[str]) -> Decision:
        if rep.held:
            return Decision(
                weights={}, rationale=rep.rationale, evidence=tuple(rep.relied_on), actions=dict(rep.actions)
            )
        w = {**{u: 0.0 for u in universe}, **rep.weights}
        return Decision(weights=w, rationale=rep.rationale, evidence=tuple(rep.relied_on), actions=dict(rep.actions))

    # -- self-consistency ----------------------------------------------------
    @staticmethod
    def _concordance(a: Alternative, cons: Mapping[str, float]) -> float:
        d = sum(abs(a.weights.get(t, 0.0) - c) for t, c in cons.items())
        return round(max(0.0, 1.0 - d / 2.0), 4)

    def _slate(self, proposals: Sequence[Sequence[Alternative]], day: Day) -> tuple[list[Alternative], bool]:
        """Pooled, deduplicated alternatives ranked by concordance with the
        samples' consensus (the median of their preferred weights); the top
        three, renamed A, B, C. ``stable``: every sample preferred the same
        directions."""
        firsts = [p[0] for p in proposals if p]
        cons = {t: float(np.median([a.weights.get(t, 0.0) for a in firsts])) if firsts else 0.0 for t in day.tickers}
        self._consensus = cons
        stable = len({_sign(a.weights, day.tickers) for a in firsts}) <= 1
        pool: dict[tuple, Alternative] = {}
        for p in proposals:
            for a in p:
                k = a.key()
                if k in pool:
                    pool[k].origin = list(dict.fromkeys(pool[k].origin + a.origin))
                else:
                    pool[k] = a.model_copy(deep=True)
        ranked = list(pool.values())
        for a in ranked:
            a.concordance = self._concordance(a, cons)
        ranked.sort(key=lambda a: -a.concordance)  # stable: first proposed first on ties
        slate = [a.model_copy(update={"name": NAMES[n]}) for n, a in enumerate(ranked[:3])]
        return slate, stable

    # -- ex-ante measures ----------------------------------------------------
    def _measure(self, proposals: Sequence[Sequence[Alternative]], day: Day) -> None:
        t = self.totals
        for p in proposals:
            for a in p:
                t["proposed"] += 1
                if a.trades:
                    t["claims"] += 1
                    t["cited"] += bool(a.evidence) and not a.invalid
                sec = a.sections()
                t["complete"] += all(sec.values())
                t["sections"] += sum(sec.values())
                checks = {i.check for i in code_checks(a, day)}
                t["calibration"] += bool(checks & {"quantiles"})
                t["arithmetic"] += "arithmetic" in checks
                t["policy"] += bool(checks & {"max_position", "max_gross", "require_evidence"})

    def summary(self) -> dict[str, Any]:
        t = self.totals
        days, n = t["days"], t["proposed"]
        return {
            "scm_samples": self.samples,
            "scm_days": days,
            "scm_reused_days": t["reused"],
            "scm_alternatives_proposed": n,
            "scm_citation_share": round(t["cited"] / t["claims"], 4) if t["claims"] else None,
            "scm_complete_share": round(t["complete"] / n, 4) if n else None,
            "scm_section_share": round(t["sections"] / (5 * n), 4) if n else None,
            "scm_calibration_violations": t["calibration"],
            "scm_arithmetic_failures": t["arithmetic"],
            "scm_policy_violations": t["policy"],
            "scm_issues": {"high": t["high"], "medium": t["medium"], "low": t["low"]},
            "scm_issues_fixed": t["fixed"],
            "scm_issues_unresolved": t["unresolved"],
            "scm_discarded": t["discarded"],
            "scm_holds": t["holds"],
            "scm_stability": round(t["stable"] / days, 4) if days else None,
            "scm_moderator_overrides": t["overrides"],
            "scm_fallbacks": t["fallbacks"],
            "scm_calls": t["calls"],
        }


def code_checks_block(a: Alternative, day: Day) -> list[Issue]:
    """The checks no chosen alternative may fail: a policy, a citation, the quantiles, the weights."""
    return [i for i in code_checks(a, day, "final") if i.severity == "high"]
