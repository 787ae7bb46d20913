"""The critics in the team (``--critics on``): every numeric claim of the
10-Q, 10-K and earnings-call analysts is checked before the protocol sees
the reports.

For each insight of those analysts: its claims (:func:`claims_in`: money
amounts and percentages with the metric they refer to), checked against the
full text of the items the insight cites (the filing or call the memory was
made from, looked up by event id; the item's own text otherwise), by the
extraction then the calculation critic. A failed claim is corrected in the
insight's text (``$4.50 billion [critic: was $4.32 billion]``) or, when the
source cannot support it, the insight is dropped. Any protocol then reads the
reviewed reports.

A reused report (unchanged inputs) carries the same insights every day: a
review is cached by (insight, sources), so a claim costs one review (and
model calls) once; the day's record says how many were reapplied.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from typing import Any, Callable, Sequence

import pandas as pd

from fincon.agents.brains import Answer
from fincon.agents.critics.claims import claims_in, format_value
from fincon.agents.critics.critics import STAGES, Review, critique
from fincon.agents.reports import AnalystReport, Insight
from fincon.agents.roles.base import RoleInputs
from fincon.data.events.model import decision_cutoff

#: the analysts whose numbers the critics check
ROLES = ("10-q", "10-k", "earnings-call")
_SAME = object()  # a cached review that changed nothing
COUNTS = (
    "claims",
    "extraction_failed",
    "calculation_failed",
    "corrected",
    "dropped",
    "unverified",
    "calls",
    "fallbacks",
    "reapplied",
)


class NumericCritics:
    def __init__(
        self,
        brain: Any,
        source_text: Callable[[str, str], str | None] | None = None,
        stages: Sequence[str] = STAGES,
        roles: Sequence[str] = ROLES,
    ):
        """``source_text(item_id, day)``: the full text behind a cited item
        (None: use the item's own text)."""
        self.brain = brain
        self.source_text = source_text or (lambda _id, _day: None)
        self.stages = tuple(stages)
        self.roles = tuple(roles)
        self.totals: Counter = Counter({k: 0 for k in COUNTS})
        self._done: dict[str, tuple[Insight | None, list[Review]]] = {}

    @classmethod
    def for_team(cls, team: Any) -> "NumericCritics":
        """Sources looked up in the team's event store (memory ``mem-<event id>``),
        only events visible on the day."""

        events = {e.id: e for e in team.events.all_events()}

        def source_text(item_id: str, day: str) -> str | None:
            e = events.get(item_id.removeprefix("mem-"))
            if e is None or not e.text or not e.published_at < decision_cutoff(pd.Timestamp(day)):
                return None
            return e.text

        return cls(team.brain, source_text)

    # -- one day ---------------------------------------------------------------
    def review(
        self, inputs: Sequence[RoleInputs], answers: Sequence[Answer], day: str
    ) -> tuple[list[Answer], dict[str, Any]]:
        """The answers with reviewed reports, and the day's counts."""
        today: Counter = Counter({k: 0 for k in COUNTS})
        notes: list[dict[str, Any]] = []
        out = []
        for inp, ans in zip(inputs, answers):
            report = ans.report
            if inp.role not in self.roles or not isinstance(report, AnalystReport) or not report.insights:
                out.append(ans)
                continue
            items = inp.by_id()
            kept: list[Insight] = []
            changed = False
            for ins in report.insights:
                sources = [
                    self.source_text(c.id, day) or (items[c.id].text if c.id in items else "") for c in ins.citations
                ]
                new, reviews, cached = self._review_insight(ins, [s for s in sources if s], inp, day, today)
                if cached and reviews:
                    today["reapplied"] += len(reviews)
                for r in reviews:
                    if r.status != "ok":
                        notes.append(
                            {
                                "agent": inp.agent,
                                "metric": r.claim.metric,
                                "claimed": r.claim.show(),
                                "status": r.status,
                                "now": r.show(),
                                "failed": [
                                    s
                                    for s, bad in (
                                        ("extraction", r.extraction_failed),
                                        ("calculation", r.calculation_failed),
                                    )
                                    if bad
                                ],
                            }
                        )
                changed |= new is not ins
                if new is not None:
                    kept.append(new)
            if changed:
                report = report.model_copy(update={"insights": kept})
                ans = dataclasses.replace(ans, report=report)
            out.append(ans)
        self.totals.update(today)
        rec: dict[str, Any] = dict(today)
        if notes:
            rec["failed"] = notes[:20]
        return out, rec

    def _review_insight(
        self, ins: Insight, sources: list[str], inp: RoleInputs, day: str, today: Counter
    ) -> tuple[Insight | None, list[Review], bool]:
        claims = claims_in(ins.text, sources)
        if not claims:
            return ins, [], False
        key = hashlib.sha256(json.dumps([ins.text, sources, self.stages]).encode()).hexdigest()
        if key in self._done:
            new, reviews = self._done[key]
            return (ins if new is _SAME else new), reviews, True
        reviews = [critique(c, self.brain, self.stages, agent=f"critic/{inp.ticker}", day=day) for c in claims]
        for r in reviews:
            today["claims"] += 1
            today["extraction_failed"] += r.extraction_failed
            today["calculation_failed"] += r.calculation_failed
            today["corrected"] += r.status == "corrected"
            today["dropped"] += r.status == "dropped"
            today["unverified"] += r.status == "unverified"
            today["calls"] += r.calls
            today["fallbacks"] += r.fallbacks
        new = rewrite(ins, reviews)
        self._done[key] = (_SAME if new is ins else new, reviews)
        return new, reviews, False

    def summary(self) -> dict[str, Any]:
        """``critic_*`` totals for ``summary.json`` (reapplied: cached reviews reused on later days)."""
        return {"critic_stages": list(self.stages), **{f"critic_{k}": int(v) for k, v in self.totals.items()}}


def rewrite(ins: Insight, reviews: Sequence[Review]) -> Insight | None:
    """The insight with corrected figures; None (dropped) if any claim was
    dropped; the same object if nothing failed."""
    if any(r.status == "dropped" for r in reviews):
        return None
    fixes = [
        r
        for r in reviews
        if r.status == "corrected" and r.value is not None and r.claim.figure is not None and r.value != r.claim.value
    ]
    if not fixes:
        return ins
    text = ins.text
    for r in sorted(fixes, key=lambda r: -r.claim.figure.span[0]):
        s, e = r.claim.figure.span
        text = (
            f"{text[:s]}{format_value(r.value, r.claim.unit, r.decimals)} [critic: was {r.claim.figure.text}]{text[e:]}"
        )
    if len(text) > 400:
        text = text[:397] + "..."
    return ins.model_copy(update={"text": text})
