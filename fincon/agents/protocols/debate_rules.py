"""``debate`` rules roles: the deterministic specialist, synthesis, Trust,
Skeptic and Leader (Loughran-McDonald tone of the retrieved chunks), used by
the rules brain and as the counted fallback; and :func:`combine`, which
assembles the final report. Pure functions of the chunks and views.
"""

from __future__ import annotations

from typing import Sequence

from fincon.agents.brains import NEUTRAL_BAND
from fincon.agents.protocols.debate_chunks import Chunk
from fincon.agents.protocols.debate_schemas import DebateReport, Direction, Specialist, View
from fincon.agents.reports import Citation, Insight
from fincon.data.lexicon import LoughranMcDonald
from fincon.llm.masking_rules import topics

#: the rules Skeptic cuts confidence by RISK_SCALE x the risk-word share, at most MAX_CUT
RISK_SCALE = 4.0
MAX_CUT = 0.5


def _lm():
    global _LM
    if _LM is None:
        _LM = LoughranMcDonald()
    return _LM


_LM = None


def _label(x: float) -> Direction:
    return "bullish" if x > NEUTRAL_BAND else "bearish" if x < -NEUTRAL_BAND else "neutral"


def _sign(d: str) -> float:
    return {"bullish": 1.0, "bearish": -1.0, "neutral": 0.0}[d]


def _cite(c: Chunk) -> Citation:
    return Citation(id=c.id, date=c.day, source="earnings_call")


def tone(chunks: Sequence[Chunk]) -> float:
    return _lm().score(" ".join(c.text for c in chunks)).tone


def risk_share(chunks: Sequence[Chunk]) -> float:
    """Share of the words that are Negative, Uncertainty or Litigious."""
    sc = _lm().score(" ".join(c.text for c in chunks))
    risky = sum(sc.counts.get(k, 0) for k in ("Negative", "Uncertainty", "Litigious"))
    return risky / max(sc.words, 1)


def rules_view(spec: Specialist, chunks: Sequence[Chunk], mask: str | None = None) -> View:
    """LM tone of the specialist's retrieved chunks; the risk specialist
    lowers it by the risk-word share (it reads risks, not just tone). Each
    insight quotes its chunk, or, under a ``mask`` (a run under --anonymize:
    its ``mask_items``), shows it as a masked item is shown: quoted, a fallback's 300 characters
    of a 10-Q reached the synthesis prompt word for word ("a change in the
    estimated useful lives of server and network equipment": MSFT's 10-Q of
    the decision day)."""
    t = tone(chunks)
    if spec.name == "risk":
        t -= risk_share(chunks)
    d = _label(t)
    conf = 0.0 if d == "neutral" else round(min(1.0, abs(t)), 4)
    insights = [
        Insight(
            text=f"{_quote(c, mask)} -> reads {_label(tone([c]))} ({tone([c]):+.2f})",
            citations=[_cite(c)],
        )
        for c in chunks[:2]
    ]
    return View(role=spec.name, direction=d, confidence=conf, horizon=5, insights=insights)


def rules_report(views: Sequence[View], ticker: str, event_id: str, day: str) -> DebateReport:
    """Equal-weight mean of the specialists' signed confidences. Horizon: 20
    days when every specialist with a view agrees, 5 on a majority, 1 when split."""
    score = sum(_sign(v.direction) * v.confidence for v in views) / max(len(views), 1)
    d = _label(score)
    sides = [_sign(v.direction) for v in views if v.direction != "neutral"]
    agree = sum(1 for s in sides if s == _sign(d)) if d != "neutral" else 0
    horizon = 20 if sides and agree == len(sides) else 5 if agree * 2 > len(sides) else 1
    backing = [v for v in views if v.direction == d] if d != "neutral" else list(views)
    insights, seen = [], set()
    for v in sorted(backing, key=lambda v: (-v.confidence, v.role)):
        for i in v.insights[:1]:
            if i.citations and i.citations[0].id not in seen:
                seen.add(i.citations[0].id)
                insights.append(Insight(text=f"{v.role}: {i.text}"[:400], citations=i.citations))
    summary = ", ".join(f"{v.role} {v.direction} {v.confidence:.2f}" for v in views)
    return DebateReport(
        ticker=ticker,
        event_id=event_id,
        day=day,
        direction=d,
        confidence=0.0 if d == "neutral" else round(min(1.0, abs(score)), 4),
        horizon=horizon,
        insights=insights[:4],
        summary=f"specialists: {summary} -> {d} ({score:+.2f})"[:400],
    )


def _quote(c: Chunk, mask: str | None) -> str:
    """A chunk as a fallback quotes it: its first 300 characters, or, under a mask, as the mask shows an
    item of the corpus (rules_view): its topics under ``topics``, nothing of it under ``tone`` (the
    default; its topics in order placed a session where the items' lines no longer did)."""
    if mask is None:
        return c.text[:300]
    return topics(c.text) if mask == "topics" else "a quoted item"


def rules_trust(report: DebateReport, chunks: Sequence[Chunk], mask: str | None = None) -> list[Insight]:
    """Keep the report; add the retrieved chunk that most supports its direction, if any."""
    cited = set(report.cited_ids())
    s = _sign(report.direction)
    best = sorted((c for c in chunks if c.id not in cited and s * tone([c]) > 0), key=lambda c: (-s * tone([c]), c.id))
    return [Insight(text=f"supports: {_quote(c, mask)}", citations=[_cite(c)]) for c in best[:1]]


def rules_skeptic(
    report: DebateReport, chunks: Sequence[Chunk], mask: str | None = None
) -> tuple[list[Insight], str, float]:
    """The chunks with the highest risk-word share as risks; confidence cut by
    RISK_SCALE x the risk-word share of ``chunks`` (at most MAX_CUT). The
    protocol passes the specialists' evidence: the chunks they cited."""
    share = risk_share(chunks)
    cut = min(MAX_CUT, RISK_SCALE * share)
    risky = sorted((c for c in chunks if risk_share([c]) > 0), key=lambda c: (-risk_share([c]), c.id))[:2]
    risks = [Insight(text=f"risk: {_quote(c, mask)}", citations=[_cite(c)]) for c in risky]
    hedge = f"risk words are {share:.1%} of the evidence: size down by {cut:.0%}" if cut else "no hedge needed"
    return risks, hedge, round(report.confidence * (1.0 - cut), 4)


def combine(
    report: DebateReport,
    evidence: list[Insight],
    risks: list[Insight],
    hedge: str,
    direction: str,
    confidence: float,
    summary: str,
) -> DebateReport:
    """The final report: the report's insights plus Trust's new evidence.
    Evidence that repeats an insight already there (same text; a small model
    often hands the report's own insights back as "support") is left out."""
    seen = {i.text.strip().lower() for i in report.insights}
    fresh = []
    for e in evidence:
        key = e.text.strip().lower()
        if key not in seen:
            seen.add(key)
            fresh.append(e)
    return report.model_copy(
        update={
            "direction": direction,
            "confidence": confidence,
            "insights": (report.insights + fresh)[:5],
            "risks": risks[:3],
            "hedge": hedge[:200],
            "summary": summary[:400],
        }
    )
