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

Where things are: this module holds the protocol (the day's context, the
questions' shape, self-consistency, the per-run measures);
:mod:`.scm_day` runs one day's rounds and is the only scm module that asks a
brain; :mod:`.scm_schemas` holds the answer and record models,
:mod:`.scm_prompts` builds every message a model reads, :mod:`.scm_checks`
the day's context and the checks in code, :mod:`.scm_rules` the
deterministic roles.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from fincon.agents.brains import Answer, ManagerTask, Question, Reuse, consensus
from fincon.agents.policies import Policies
from fincon.agents.protocols.fincon import FinConManager
from fincon.agents.protocols.scm_checks import Day, code_checks, code_checks_block, sections_said
from fincon.agents.protocols.scm_day import ScmDay
from fincon.agents.protocols.scm_prompts import prompt_values
from fincon.agents.protocols.scm_rules import rules_critic, rules_fix, rules_moderator, rules_strategist
from fincon.agents.protocols.scm_schemas import (
    NAMES,
    Alternative,
    Critique,
    Issue,
    Proposal,
    ScmReport,
    Verdict,
    VerifyAnswer,
)
from fincon.agents.reports import short_labels
from fincon.data.events.model import decision_cutoff
from fincon.llm.types import SamplingParams
from fincon.strategies.base import Decision

__all__ = [
    "Alternative",
    "Critique",
    "Issue",
    "Proposal",
    "ScmProtocol",
    "ScmReport",
    "Verdict",
    "code_checks",
    "code_checks_block",
    "rules_critic",
    "rules_fix",
    "rules_moderator",
    "rules_strategist",
]

#: the Strategist's sampling temperature when samples > 1 (at least this)
SAMPLE_TEMPERATURE = 0.7

# -- the protocol --------------------------------------------------------------


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
                "agreement",
                "verified",
                "verify_passed",
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
        return prompt_values(day, self.policies)

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

    def _q(
        self, role: str, day: Day, model, messages, to_report, rules, params=None, cites=False, fallback=None
    ) -> Question:
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
            fallback=fallback,
        )

    def _sample_params(self, brain, k: int):
        if self.samples <= 1:
            return self.sampling
        base = self.sampling or getattr(getattr(brain, "client", None), "params", None)
        if base is None:
            base = SamplingParams()
        return base.model_copy(update={"temperature": max(base.temperature, self.temperature), "seed": base.seed + k})

    # -- the day -------------------------------------------------------------
    def decide(
        self, brain, task: ManagerTask, view, universe: tuple[str, ...]
    ) -> tuple[Decision, Answer, dict[str, Any]]:
        """The day's decision: a reused report as it was, else the rounds of
        :class:`.scm_day.ScmDay` (T0 Strategist samples, T1 Critic, T2 fix and
        verification, T3 Moderator)."""

        if isinstance(brain, Reuse):
            self.totals["reused"] += 1
            rep: ScmReport = brain.report
            return self._decision(rep, universe), Answer(rep, "reuse"), {**rep.model_dump(), "reused": True}
        report, ans = ScmDay(self, brain, task, view).run()
        return self._decision(report, universe), ans, report.model_dump()

    @staticmethod
    def _to_checks(a: VerifyAnswer, n: int) -> list[tuple[bool, str, str, list[str]]]:
        """The verifier's answers in question order; a question it skipped does not pass."""
        said = {x.issue.strip().upper(): x for x in a.checks}
        out = []
        for k in range(1, n + 1):
            x = said.get(f"Q{k}")
            out.append(
                (False, "not answered by the verifier", "model", [])
                if x is None
                else (bool(x.passes), x.answer, "model", list(x.cites))
            )
        return out

    @staticmethod
    def _stamped(log: list[dict[str, Any]], day: str, role_keys: Mapping[str, list[str]]) -> list[dict[str, Any]]:
        """Every record with its UTC timestamp and the cache keys of the calls
        behind it. The timestamp is the simulated decision time of the day
        (16:00 New York, in UTC): what the protocol knew when, reproducible
        on replay (a wall clock would make every replay differ)."""

        at = decision_cutoff(day).strftime("%Y-%m-%dT%H:%M:%SZ")
        role = {
            ("T0", "strategist"): "strategist",
            ("T1", "critic"): "critic",
            ("T2", "strategist"): "fix",
            ("T2", "verifier"): "verify",
            ("T3", "moderator"): "moderator",
        }
        out = []
        for e in log:
            r = role.get((e["step"], e["agent"]), e["step"] if e["step"] in role_keys else "")
            out.append({"at": at, **e, "keys": list(role_keys.get(r, []))})
        return out

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

    def _slate(
        self,
        proposals: Sequence[Sequence[Alternative]],
        day: Day,
        voters: Sequence[Sequence[Alternative]] | None = None,
    ) -> tuple[list[Alternative], bool]:
        """Pooled, deduplicated alternatives ranked by concordance with the
        samples' consensus: per ticker the majority direction (more than half)
        of the voting samples' (``voters``, by default all) preferred
        alternatives, sized by the median size among the samples in that
        majority (no majority: flat). The top three, renamed A, B, C.
        ``stable``: every voting sample preferred the same directions; the
        agreement rate (share of them whose preferred directions are the
        majority's) is kept for the record and the summary."""
        firsts = [p[0] for p in (proposals if voters is None else voters) if p]
        cons, majority = {}, {}
        for t in day.tickers:  # the majority direction across samples, then the median size within it
            signs = [int(np.sign(round(a.weights.get(t, 0.0), 6))) for a in firsts]
            counts = {d: signs.count(d) for d in (1, -1, 0)}
            top = max(counts.values()) if signs else 0
            winners = [d for d in (1, -1, 0) if counts[d] == top]
            # no majority, no direction (2 of 4 samples long, one short, one flat: a plurality went long)
            d = winners[0] if len(winners) == 1 and 2 * top > len(signs) else 0
            majority[t] = d
            sizes = [abs(a.weights.get(t, 0.0)) for a, s in zip(firsts, signs) if s == d]
            cons[t] = float(d * np.median(sizes)) if d and sizes else 0.0
        self._consensus = cons
        self._majority = majority
        want = tuple(majority[t] for t in day.tickers)
        self._agreement = (
            round(sum(_sign(a.weights, day.tickers) == want for a in firsts) / len(firsts), 4) if firsts else 1.0
        )
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
                sec = sections_said(a, day)
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
            "scm_agreement": round(t["agreement"] / days, 4) if days else None,
            "scm_verification_questions": t["verified"],
            "scm_verification_passed": t["verify_passed"],
            "scm_moderator_overrides": t["overrides"],
            "scm_fallbacks": t["fallbacks"],
            "scm_calls": t["calls"],
            # its sizer's days in cash for want of history, counted as the team's manager counts them
            **({"team_short_history_days": self._sizer.short_history} if self._sizer.short_history else {}),
        }
