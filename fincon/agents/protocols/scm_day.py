"""One ``scm`` day, round by round (:class:`ScmDay`): the Strategist's
samples (T0), the Critic (T1), the fix and the verification of the fixes
(T2), the Moderator (T3) and the report the team records.

Each round is one method, in the order the day runs them; each asks the
brain at most one question (the Strategist one per sample) and appends to
the day's log. May touch: the brain, the protocol's running totals (the
per-run measures of :meth:`.scm.ScmProtocol.summary`); nothing else. The
protocol's self-consistency (pooling, concordance) and the checks in code
live in :mod:`.scm` and :mod:`.scm_checks`.
"""

from __future__ import annotations

from typing import Any

from fincon.agents.brains import Answer, ManagerTask, Question
from fincon.agents.protocols.scm_checks import code_checks, code_checks_block
from fincon.agents.protocols.scm_prompts import render
from fincon.agents.protocols.scm_rules import rules_critic, rules_fix, rules_moderator, rules_strategist, rules_verify
from fincon.agents.protocols.scm_schemas import (
    EPS,
    Alternative,
    Critique,
    CritiqueAnswer,
    Issue,
    ModeratorAnswer,
    ScmReport,
    Verdict,
    VerifyAnswer,
    proposal_model,
)
from fincon.llm.concurrency import run_concurrently

#: a critic's issue whose verification the model's answer (invalid twice) never gave: unresolved
UNVERIFIED = "could not verify: the verifier's answer was invalid twice"


class ScmDay:
    """The state of one day's rounds: the questions asked, their answers
    and the log the decision record keeps."""

    def __init__(self, protocol: Any, brain, task: ManagerTask, view):
        # protocol: the .scm.ScmProtocol running the day (not imported: scm imports this module)
        self.p = protocol
        self.totals = protocol.totals
        self.brain = brain
        self.task = task
        self.day = protocol.context(task, view)
        self.values = protocol._prompt_values(self.day)
        self.pmodel = proposal_model(task.tickers)
        self.answers: list[Answer] = []
        self.steps: dict[str, str] = {}
        self.log: list[dict[str, Any]] = []
        self.role_keys: dict[str, list[str]] = {}

    def run(self):
        """The day: every round, then the decision (see :meth:`.scm.ScmProtocol.decide`)."""
        proposals, got = self.strategist()
        # the model's samples vote and are measured; a sample whose answer fell back is the rules
        # strategist's, which outvoted the model's one valid sample (they vote only when all fell back)
        said = [p for p, a in zip(proposals, got) if a.via != "fallback"]
        slate, stable = self.p._slate(proposals, self.day, voters=said or proposals)
        majority, agreement = self.p._majority, self.p._agreement
        self.totals["agreement"] += agreement
        self.p._measure(said, self.day)
        self.log.append(
            {
                "step": "T0",
                "agent": "strategist",
                "action": "proposed",
                "details": f"{sum(map(len, proposals))} alternatives in {len(proposals)} sample(s); slate "
                + ", ".join(f"{a.name} (concordance {a.concordance:.2f}, from {'/'.join(a.origin)})" for a in slate)
                + ("" if stable else "; the samples disagree on the direction")
                + f"; majority direction {majority}, agreement {agreement:.2f}",
            }
        )
        issues, c_vals = self.critic(slate)
        revised, fixes, todo = self.fix(slate, issues, c_vals)
        issues = self.settle(issues, revised, fixes, todo)
        chosen, verdict, discarded = self.moderate(revised, issues)
        self.totals["days"] += 1
        self.totals["stable"] += stable
        self.totals["calls"] += sum(a.calls for a in self.answers)
        report = self.report(chosen, verdict, discarded, proposals, got, revised, issues, fixes)
        report.stable = stable
        report.majority, report.agreement = majority, agreement
        return report, self.answer(report)

    # -- asking --------------------------------------------------------------
    def ask(self, q: Question, step: str) -> Answer:
        return self.keep(
            self.brain.answer(q), step, step, step, q.agent, "model answer invalid twice: the rules version answered"
        )

    def keep(self, a: Answer, step: str, role: str, log_step: str, agent: str, fallback: str) -> Answer:
        """Record one answer: its route, its cache keys, and a logged fallback."""
        self.answers.append(a)
        self.steps[step] = a.via
        self.role_keys.setdefault(role, []).extend(a.keys)
        self.totals["fallbacks"] += a.via == "fallback"
        if a.via == "fallback":
            self.log.append({"step": log_step, "agent": agent, "action": "fallback", "details": fallback})
        return a

    # -- T0: the Strategist, `samples` times -----------------------------------
    def strategist(self) -> tuple[list[list[Alternative]], list[Answer]]:
        p, day, brain = self.p, self.day, self.brain
        values = self.values
        s_msgs = lambda: render("strategist", values)  # noqa: E731
        qs = [
            p._q(
                "strategist",
                day,
                self.pmodel,
                s_msgs,
                lambda a, k=k: p._to_alts(a, day, f"s{k}"),
                lambda k=k: p._tag(rules_strategist(day), f"s{k}"),
                params=p._sample_params(brain, k),
                cites=True,
            )
            for k in range(p.samples)
        ]
        conc = getattr(p.team, "concurrency", 1) if p.team is not None else 1

        got = (
            run_concurrently([lambda q=q: brain.answer(q) for q in qs], conc)
            if conc > 1
            else [brain.answer(q) for q in qs]
        )
        proposals = []
        for k, a in enumerate(got):
            why = f"sample {k}: model answer invalid twice, the rules strategist answered"
            self.keep(a, f"strategist.s{k}", "strategist", "T0", "strategist", why)
            proposals.append(a.report.alternatives)
        return proposals, got

    # -- T1: the Critic (the code checks always, the model's issues on top) ----
    def critic(self, slate: list[Alternative]) -> tuple[list[Issue], dict[str, str]]:
        p, day = self.p, self.day
        slate_txt = "\n".join(a.brief(day.labels) for a in slate)
        names = {a.name for a in slate}
        code = [i for a in slate for i in code_checks(a, day)]
        c_vals = {
            **self.values,
            "alternatives": slate_txt,
            "checks": "\n".join(f"- {i.alternative} {i.severity} {i.category}: {i.issue}" for i in code) or "(none)",
        }
        crit = self.ask(
            p._q(
                "critic",
                day,
                CritiqueAnswer,
                lambda: render("critic", c_vals),
                lambda a: Critique(issues=[Issue(**i.model_dump(), by="critic") for i in a.issues]),
                lambda: rules_critic(slate, day),
                params=p.sampling,
            ),
            "critic",
        )
        issues = code + [i for i in crit.report.issues if i.alternative in names]
        for i in issues:
            self.totals[i.severity] += 1
        self.log.append(
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
        return issues, c_vals

    # -- T2: the Strategist fixes the high and medium issues (one round) -------
    def fix(
        self, slate: list[Alternative], issues: list[Issue], c_vals: dict[str, str]
    ) -> tuple[list[Alternative], list[dict[str, Any]], list[Issue]]:
        p, day = self.p, self.day
        todo = [i for i in issues if i.severity in ("high", "medium")]
        fixes: list[dict[str, Any]] = []
        revised = slate
        if todo:
            f_vals = {
                **c_vals,
                "issues": "\n".join(f"- {i.alternative} {i.severity} {i.category}: {i.issue}" for i in todo),
            }
            fix = self.ask(
                p._q(
                    "fix",
                    day,
                    self.pmodel,
                    lambda: render("fix", f_vals),
                    lambda a: p._to_alts(a, day, None),
                    lambda: rules_fix(slate, todo, day),
                    params=p.sampling,
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
                b.concordance = p._concordance(b, p._consensus)
        return revised, fixes, todo

    def settle(
        self, issues: list[Issue], revised: list[Alternative], fixes: list[dict[str, Any]], todo: list[Issue]
    ) -> list[Issue]:
        """Each issue's status after the revision. The code checks run again on
        the revision; a code issue is fixed when its check passes. A critic's
        issue is fixed only when its alternative was revised AND its
        verification question, answered against the evidence (the model; the
        rules re-check in code), passes."""
        p, day = self.p, self.day
        recheck = {a.name: code_checks(a, day, "revision") for a in revised}
        changed = {f["alternative"] for f in fixes}
        by_rev = {a.name: a for a in revised}
        to_verify = [i for i in issues if i.by != "code" and i.severity != "low" and i.alternative in changed]
        if to_verify:
            v_vals = {
                **self.values,
                "alternatives": "\n".join(by_rev[n].brief(day.labels) for n in sorted(changed)),
                "questions": "\n".join(
                    f"Q{n}: alternative {i.alternative}, {i.category}: {i.issue}. {i.question or 'Is this fixed?'}"
                    for n, i in enumerate(to_verify, 1)
                ),
            }
            ver = self.ask(
                p._q(
                    "verify",
                    day,
                    VerifyAnswer,
                    lambda: render("verify", v_vals),
                    lambda a: p._to_checks(a, len(to_verify)),
                    lambda: [(ok, why, "rules", []) for ok, why in rules_verify(to_verify, by_rev, day)],
                    params=p.sampling,
                    cites=True,
                    # the model's answer invalid twice: nothing verified (the rules re-check in code cannot
                    # judge a critic's point of meaning, and passed every high issue it was handed)
                    fallback=lambda: [(False, UNVERIFIED, "fallback", []) for _ in to_verify],
                ),
                "verify",
            )
            for i, (ok, why, by, cites) in zip(to_verify, ver.report):
                i.answer, i.answer_cites, i.rechecked_by = why, list(cites), by
                i.status = "fixed" if ok else "unresolved"
            self.totals["verified"] += len(to_verify) if ver.via != "fallback" else 0  # none was, counted a fallback
            self.totals["verify_passed"] += sum(i.status == "fixed" for i in to_verify)
            self.log.append(
                {
                    "step": "T2",
                    "agent": "verifier",
                    "action": "verified",
                    "details": "; ".join(
                        f"{i.alternative} {i.category}: {'passes' if i.status == 'fixed' else 'fails'} ({i.answer})"
                        for i in to_verify
                    )[:400],
                }
            )
        for i in issues:
            if i.severity == "low":
                i.status = "noted"
            elif i.by == "code":
                still = any(j.check == i.check and j.category == i.category for j in recheck[i.alternative])
                i.status = "unresolved" if still else "fixed"
                i.rechecked_by = "code"
            elif i not in to_verify:
                i.status = "unresolved"  # not revised: the issue stands
        new = [
            j
            for a in revised
            for j in recheck[a.name]
            if not any(i.by == "code" and i.alternative == j.alternative and i.check == j.check for i in issues)
        ]
        for j in new:
            j.status = "unresolved" if j.severity != "low" else "noted"
        issues = issues + new
        self.totals["fixed"] += sum(i.status == "fixed" for i in issues)
        self.totals["unresolved"] += sum(i.status == "unresolved" for i in issues)
        if todo:
            self.log.append(
                {
                    "step": "T2",
                    "agent": "strategist",
                    "action": "revised",
                    "details": f"{len(fixes)} alternative(s) revised; "
                    f"{sum(i.status == 'fixed' for i in issues)} issue(s) fixed, "
                    f"{sum(i.status == 'unresolved' for i in issues)} unresolved",
                }
            )
        return issues

    # -- T3: the Moderator: discards in code, then the choice ------------------
    def moderate(
        self, revised: list[Alternative], issues: list[Issue]
    ) -> tuple[Alternative | None, Verdict, dict[str, str]]:
        p, day = self.p, self.day
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
                **self.values,
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
            mod = self.ask(
                p._q(
                    "moderator",
                    day,
                    ModeratorAnswer,
                    lambda: render("moderator", m_vals),
                    lambda a: Verdict(
                        discard=[d.model_dump() for d in a.discard],
                        choice=a.choice,
                        rationale=a.rationale,
                        relied_on=list(a.relied_on),
                    ),
                    lambda: rules_moderator(survivors),
                    params=p.sampling,
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
            self.log.append(
                {"step": "T3", "agent": "moderator", "action": "discarded", "details": f"{name}: {why}"[:400]}
            )
        self.totals["discarded"] += len(discarded)
        chosen = next((a for a in survivors if a.name == verdict.choice), None)
        if chosen is None and survivors:
            chosen = rules_moderator(survivors).choice
            chosen = next(a for a in survivors if a.name == chosen)
            self.totals["overrides"] += 1
            self.log.append(
                {
                    "step": "T3",
                    "agent": "moderator",
                    "action": "overridden",
                    "details": f"choice {verdict.choice!r} is not a surviving alternative; "
                    f"{chosen.name}, the most concordant survivor, taken",
                }
            )
        return chosen, verdict, discarded

    # -- the decision, checked once more in code -------------------------------
    def report(
        self,
        chosen: Alternative | None,
        verdict: Verdict,
        discarded: dict[str, str],
        proposals: list[list[Alternative]],
        got: list[Answer],
        revised: list[Alternative],
        issues: list[Issue],
        fixes: list[dict[str, Any]],
    ) -> ScmReport:
        task, day = self.task, self.day
        tk = task.tickers
        if chosen is None:
            self.totals["holds"] += 1
            self.log.append(
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
            self.log.append(
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
        report.log = self.p._stamped(self.log, task.day, self.role_keys)
        report.steps = self.steps
        return report

    def answer(self, report: ScmReport) -> Answer:
        """The day as one answer: every call's keys and errors, and how it was obtained."""
        answers = self.answers
        via = (
            "rules"
            if all(a.via == "rules" for a in answers)
            else "fallback"
            if any(a.via == "fallback" for a in answers)
            else "llm"
        )
        return Answer(
            report,
            via,
            sum(a.calls for a in answers),
            tuple(k for a in answers for k in a.keys),
            tuple(e for a in answers for e in a.errors),
        )
