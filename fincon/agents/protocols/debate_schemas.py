"""``debate`` schemas: the specialists, the views and reports the protocol
keeps (:class:`View`, :class:`DebateReport`, :class:`Debate`,
:class:`Outcome`) and the answer models the brain validates. Only models:
no model call, no prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fincon.agents.reports import Insight, InsightAnswer, ManagerReport

HORIZONS = (1, 5, 20)
Direction = Literal["bullish", "bearish", "neutral"]
Horizon = Literal[1, 5, 20]


# -- specialists -----------------------------------------------------------------


@dataclass(frozen=True)
class Specialist:
    name: str
    focus: str
    query: str


SPECIALISTS: tuple[Specialist, ...] = (
    Specialist(
        "earnings",
        "revenue quality, profitability and the sustainability of earnings",
        "revenue earnings operating margin profitability results quarter billion percent beat miss",
    ),
    Specialist(
        "market",
        "the likely market reaction over the next day, week and month",
        "outlook guidance next quarter expect growth demand environment looking ahead",
    ),
    Specialist(
        "sentiment",
        "management's tone, confidence and credibility",
        "management confident strong pleased record cautious weak disappointing results tone",
    ),
    Specialist(
        "valuation",
        "whether growth and margins justify the valuation",
        "growth margin cash flow pricing valuation capital expenditures competitive position",
    ),
    Specialist(
        "risk",
        "risks, headwinds and uncertainty, and how much to size a position",
        "risk challenge headwinds uncertainty difficult delays decline litigation pressure concerns",
    ),
)


class View(BaseModel):
    """One specialist's view, or the synthesised report (``role`` = "report")."""

    model_config = ConfigDict(extra="forbid")

    role: str
    direction: Direction = "neutral"
    confidence: float = Field(0.0, ge=0.0, le=1.0)
    horizon: Horizon = 5
    insights: list[Insight] = Field(default_factory=list)

    def cited_ids(self) -> list[str]:
        return list(dict.fromkeys(c.id for i in self.insights for c in i.citations))


class DebateReport(BaseModel):
    """The report on one call, before or after the debate."""

    model_config = ConfigDict(extra="forbid")

    ticker: str
    event_id: str
    day: str
    direction: Direction
    confidence: float = Field(ge=0.0, le=1.0)
    horizon: Horizon
    insights: list[Insight] = Field(default_factory=list)
    risks: list[Insight] = Field(default_factory=list)
    hedge: str = ""
    summary: str = ""

    def cited_ids(self) -> list[str]:
        return list(dict.fromkeys(c.id for i in [*self.insights, *self.risks] for c in i.citations))


class Debate(BaseModel):
    """Everything one debate day did for one ticker (kept for reuse and the record)."""

    model_config = ConfigDict(extra="forbid")

    ticker: str
    event_id: str
    chunks: int
    views: list[View]
    report: DebateReport
    final: DebateReport
    #: the Leader's own direction, before the safety check
    leader_direction: Direction
    flip_prevented: bool = False
    debated: bool = True
    via: dict[str, str] = Field(default_factory=dict)


class Outcome(BaseModel):
    """The protocol's answer on a debate day: the decision report and the debates."""

    model_config = ConfigDict(extra="forbid")

    manager: ManagerReport
    debates: list[Debate]


# -- what the model fills --------------------------------------------------------------


class ViewAnswer(BaseModel):
    direction: Direction
    confidence: float = Field(ge=0.0, le=1.0)
    horizon: Horizon
    insights: list[InsightAnswer] = Field(min_length=1, max_length=2)

    def cited(self):
        return (c for i in self.insights for c in i.cites)

    def relabeled(self, back):
        return self.model_copy(
            update={
                "insights": [
                    i.model_copy(update={"cites": list(dict.fromkeys(back.get(c, c) for c in i.cites))})
                    for i in self.insights
                ]
            }
        )


class TrustAnswer(BaseModel):
    """Supporting evidence only: Trust has no direction to give."""

    evidence: list[InsightAnswer] = Field(min_length=1, max_length=2)

    def cited(self):
        return (c for i in self.evidence for c in i.cites)

    def relabeled(self, back):
        return self.model_copy(
            update={
                "evidence": [
                    i.model_copy(update={"cites": list(dict.fromkeys(back.get(c, c) for c in i.cites))})
                    for i in self.evidence
                ]
            }
        )


class SkepticAnswer(BaseModel):
    risks: list[InsightAnswer] = Field(min_length=1, max_length=2)
    hedge: str = Field(min_length=1, max_length=120)
    confidence: float = Field(ge=0.0, le=1.0)

    def cited(self):
        return (c for i in self.risks for c in i.cites)

    def relabeled(self, back):
        return self.model_copy(
            update={
                "risks": [
                    i.model_copy(update={"cites": list(dict.fromkeys(back.get(c, c) for c in i.cites))})
                    for i in self.risks
                ]
            }
        )


class LeaderAnswer(BaseModel):
    direction: Direction
    confidence: float = Field(ge=0.0, le=1.0)
    summary: str = Field(min_length=1, max_length=200)

    def cited(self):
        return iter(())

    def relabeled(self, back):
        return self
