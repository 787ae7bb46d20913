"""One ``debate`` of one event, stage by stage (:class:`DebateRound`): the
five specialists' views, the synthesised report, then the one round of
*safe* debate (Trust, Skeptic, Leader) and the final report, which replaces
the report only if the Leader kept its direction (a flip is prevented and
counted). A neutral report has nothing to refine: the round ends after the
synthesis.

Each stage is one method, in the order :meth:`DebateRound.run` calls them;
each asks the brain one question per role, and the round tallies the model
calls, the fallbacks, the cache keys and how each role was answered. The
order of the questions and every message are what the recorded debate
replays hold: change them and the recordings must be made again.

May touch: the brain and the retrieval it is given (the call's chunks, top k
for a query); nothing else. Which events are debated, the chunks' chromadb
collection, and how debates become decisions over their horizons live in
:mod:`.debate` (:class:`~.debate.DebateProtocol`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from fincon.agents.brains import Question
from fincon.agents.protocols.debate_chunks import Chunk
from fincon.agents.protocols.debate_prompts import (
    KINDS,
    _call_text,
    _chunk_lines,
    _evidence_lines,
    _insight_lines,
    _insights,
    _messages,
    _report_text,
)
from fincon.agents.protocols.debate_rules import combine, rules_report, rules_skeptic, rules_trust, rules_view
from fincon.agents.protocols.debate_schemas import (
    SPECIALISTS,
    Debate,
    DebateReport,
    LeaderAnswer,
    SkepticAnswer,
    TrustAnswer,
    View,
    ViewAnswer,
)
from fincon.agents.reports import Insight, short_labels


class DebateRound:
    """One debate of one event: its chunks and their prompt labels, and the
    tally of the questions the brain answered."""

    def __init__(
        self,
        brain,
        event,
        day: str,
        chunks: Sequence[Chunk],
        retrieve: Callable[[Sequence[Chunk], str], list[Chunk]],
        sampling: Any = None,
    ):
        """``chunks``: the call's chunks, in the call's order (indexed by the
        protocol); ``retrieve(chunks, query)``: the top chunks for a
        specialist's query; ``sampling``: the manager's sampling params."""
        self.brain, self.event, self.day = brain, event, day
        #: under --anonymize, the mask's ``items`` ("tone" or "topics"): a rules fallback quotes its chunks as
        #: the mask shows an item, never their words
        masker = getattr(getattr(brain, "client", None), "masker", None)
        self.mask: str | None = None if masker is None else masker.items
        self.chunks = list(chunks)
        self.retrieve = retrieve
        self.sampling = sampling
        self.ticker = event.ticker
        self.kind = KINDS.get(event.source, event.source)
        self.by_id = {c.id: c for c in self.chunks}
        self.labels = short_labels(c.id for c in self.chunks)  # id -> label
        self.back = {v: k for k, v in self.labels.items()}
        self.allowed = frozenset(self.by_id)  # a role may cite only this call's chunks
        self.calls = self.fallbacks = 0
        self.keys: list[str] = []
        self.via: dict[str, str] = {}

    def run(self) -> tuple[Debate, int, int, list[str]]:
        """Specialists -> report -> Trust, Skeptic, Leader -> safe final report.
        Returns the debate, model calls, fallbacks and cache keys."""
        views, read = self.specialists()
        report = self.synthesis(views, read)
        if report.direction == "neutral":  # nothing to refine: the report stands, no debate
            return self._result(views, report, report, report.direction, debated=False)
        evidence = self.trust(report, read)
        risks, hedge, conf = self.skeptic(views, report, read)
        lead = self.leader(report, evidence, risks, hedge, conf)
        flipped = lead.direction != report.direction
        # a Leader that turned the direction is overruled on it, not on the debate: the rules Leader's final
        # (the report's direction, the Skeptic's risks, hedge and confidence). The report as it stood before
        # the debate dropped the Skeptic's risks and hedge, and its size was 57 % larger than an agreeing
        # Leader's (found in review)
        final = (
            combine(report, evidence, risks, hedge, report.direction, min(report.confidence, conf), report.summary)
            if flipped
            else combine(report, evidence, risks, hedge, lead.direction, lead.confidence, lead.summary)
        )
        return self._result(views, report, final, lead.direction, flip_prevented=flipped)

    # -- asking ----------------------------------------------------------------------
    def ask(self, role: str, messages, model, to_report, rules):
        """One role's question to the brain (citations limited to this call's
        chunks, shown by label); tallies the answer and returns its report."""
        q = Question(
            agent=f"debate-{role}/{self.ticker}",
            day=self.day,
            messages=messages,
            model=model,
            allowed=self.allowed,
            to_report=to_report,
            rules=rules,
            params=self.sampling,
            labels=self.back,
        )
        a = self.brain.answer(q)
        self.calls += a.calls
        self.fallbacks += a.via == "fallback"
        self.keys.extend(a.keys)
        self.via[role] = a.via
        return a.report

    def messages(self, template: str, **values: str) -> list[dict[str, str]]:
        """A role's messages, with the document's kind, the ticker and the day filled in."""
        return _messages(template, kind=self.kind, ticker=self.ticker, date=self.day, **values)

    # -- the stages --------------------------------------------------------------------
    def specialists(self) -> tuple[list[View], list[Chunk]]:
        """Each specialist's view of its own top chunks; and every chunk any of
        them read, in the order they were first retrieved."""
        views, retrieved = [], {}
        for spec in SPECIALISTS:
            got = self.retrieve(self.chunks, spec.query)
            retrieved[spec.name] = got
            views.append(
                self.ask(
                    spec.name,
                    lambda spec=spec, got=got: self.messages(
                        "specialist", role=spec.name, focus=spec.focus, chunks=_chunk_lines(got, self.labels)
                    ),
                    ViewAnswer,
                    lambda a, spec=spec: View(
                        role=spec.name,
                        direction=a.direction,
                        confidence=a.confidence,
                        horizon=a.horizon,
                        insights=_insights(a.insights, self.by_id),
                    ),
                    lambda spec=spec, got=got: rules_view(spec, got, self.mask),
                )
            )
        seen = list(dict.fromkeys(c.id for s in SPECIALISTS for c in retrieved[s.name]))
        return views, [self.by_id[i] for i in seen]

    def synthesis(self, views: Sequence[View], read: Sequence[Chunk]) -> DebateReport:
        """The one report on the call, from the specialists' views and the chunks they read."""
        labels, event = self.labels, self.event

        def view_lines():
            return "\n".join(
                f"- {v.role}: {v.direction} (confidence {v.confidence:.2f}, horizon {v.horizon}). "
                + " ".join(
                    f"{i.text[:150]} [{', '.join(labels.get(c.id, c.id) for c in i.citations)}]" for i in v.insights
                )
                for v in views
            )

        return self.ask(
            "synthesis",
            lambda: self.messages("synthesis", views=view_lines(), chunks=_chunk_lines(read, labels)),
            ViewAnswer,
            lambda a: DebateReport(
                ticker=self.ticker,
                event_id=event.id,
                day=self.day,
                direction=a.direction,
                confidence=a.confidence,
                horizon=a.horizon,
                insights=_insights(a.insights, self.by_id),
                summary="synthesis of the five specialists",
            ),
            lambda: rules_report(views, self.ticker, event.id, self.day),
        )

    def trust(self, report: DebateReport, read: Sequence[Chunk]) -> list[Insight]:
        """Trust: supporting evidence for the report (no direction of its own)."""
        return self.ask(
            "trust",
            lambda: self.messages(
                "trust", report=_report_text(report, self.labels), chunks=_chunk_lines(read, self.labels)
            ),
            TrustAnswer,
            lambda a: _insights(a.evidence, self.by_id),
            lambda: rules_trust(report, read, self.mask),
        )

    def skeptic(
        self, views: Sequence[View], report: DebateReport, read: Sequence[Chunk]
    ) -> tuple[list[Insight], str, float]:
        """Skeptic: risks, a hedge and a lowered confidence. It reads the
        specialists' evidence (the chunks they cited, each with who cited
        it) and the report's call, not the report's prose."""
        cited_by: dict[str, list[str]] = {}
        for v in views:
            for cid in v.cited_ids():
                if cid in self.by_id:
                    cited_by.setdefault(cid, []).append(v.role)
        evidence_chunks = [c for c in self.chunks if c.id in cited_by] or list(read)
        return self.ask(
            "skeptic",
            lambda: self.messages(
                "skeptic", call=_call_text(report), chunks=_evidence_lines(evidence_chunks, cited_by, self.labels)
            ),
            SkepticAnswer,
            lambda a: (_insights(a.risks, self.by_id), a.hedge, a.confidence),
            lambda: rules_skeptic(report, evidence_chunks, self.mask),
        )

    def leader(
        self, report: DebateReport, evidence: Sequence[Insight], risks: Sequence[Insight], hedge: str, conf: float
    ) -> LeaderAnswer:
        """Leader: the final direction, confidence and summary from the report,
        Trust's evidence and the Skeptic's risks."""
        return self.ask(
            "leader",
            lambda: self.messages(
                "leader",
                report=_report_text(report, self.labels),
                evidence=_insight_lines(evidence, self.labels),
                risks=_insight_lines(risks, self.labels),
                hedge=hedge,
                confidence=f"{conf:.2f}",
            ),
            LeaderAnswer,
            lambda a: a,
            lambda: LeaderAnswer(
                direction=report.direction,
                confidence=conf,
                summary=f"{report.direction} on the call, {len(evidence)} added evidence, {len(risks)} risks; {hedge}"[
                    :200
                ],
            ),
        )

    def _result(
        self,
        views: list[View],
        report: DebateReport,
        final: DebateReport,
        leader_direction: str,
        debated: bool = True,
        flip_prevented: bool = False,
    ) -> tuple[Debate, int, int, list[str]]:
        debate = Debate(
            ticker=self.ticker,
            event_id=self.event.id,
            chunks=len(self.chunks),
            views=views,
            report=report,
            final=final,
            leader_direction=leader_direction,
            flip_prevented=flip_prevented,
            debated=debated,
            via=self.via,
        )
        return debate, self.calls, self.fallbacks, self.keys
