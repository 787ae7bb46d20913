"""The schemas every role answers in, and the citation check.

Two layers, on purpose:

* what an agent *reports* (:class:`AnalystReport`, :class:`ManagerReport`):
  every insight carries full citations (id, date, source) so a reader of
  ``decisions.jsonl`` can check each claim against the evidence;
* what a *model* is asked to fill (:class:`AnalystAnswer`,
  :class:`TickerAnswer`, :func:`portfolio_answer_model`): only the ids it
  cites. A 1.5B model copies ids far more reliably than dates and sources,
  and the dates and sources are looked up from the agent's own input, so
  they cannot be wrong.

The citation check runs *inside* pydantic validation (:func:`checked`
builds a subclass with the day's allowed ids), so an answer citing an id that
was not in the agent's input fails like any other schema error: the LLM
client re-asks once quoting the error, then raises ``LLMInvalidAnswer`` and
the agent takes the counted rules-brain fallback. The subclass keeps the
base's name and JSON schema, so cache keys do not depend on the check.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

Direction = Literal["bullish", "bearish", "neutral"]
Action = Literal["buy", "sell", "hold"]
MAX_INSIGHTS = 5
MAX_CITES = 3


class Citation(BaseModel):
    """One piece of evidence: a memory, event or computed indicator."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    date: str  # YYYY-MM-DD: the day the item became visible (indicators: the decision day)
    source: str


class Insight(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=400)
    citations: list[Citation] = Field(default_factory=list, max_length=MAX_CITES)


class AnalystReport(BaseModel):
    """What one analyst says about one ticker on one day."""

    model_config = ConfigDict(extra="forbid")

    role: str
    ticker: str
    insights: list[Insight] = Field(default_factory=list, max_length=MAX_INSIGHTS)
    direction: Direction = "neutral"
    confidence: float = Field(0.0, ge=0.0, le=1.0)

    def cited_ids(self) -> list[str]:
        return list(dict.fromkeys(c.id for i in self.insights for c in i.citations))

    @property
    def signed(self) -> float:
        """Direction times confidence, in [-1, 1]."""
        s = {"bullish": 1.0, "bearish": -1.0, "neutral": 0.0}[self.direction]
        return s * self.confidence


class ManagerReport(BaseModel):
    """The manager's decision: one action per traded ticker (single ticker:
    one entry, with a size; portfolio: directions, sizes set by the optimizer)."""

    model_config = ConfigDict(extra="forbid")

    actions: dict[str, Action]
    size: float = Field(1.0, ge=0.0, le=1.0)
    rationale: str = Field("", max_length=600)
    relied_on: list[str] = Field(default_factory=list)


# -- what the model fills ----------------------------------------------------

#: what a model may write per answer: fewer and shorter than a report may
#: hold, so an answer ends well inside the token cap of a small local model
MODEL_INSIGHTS = 3
MODEL_CITES = 2


class InsightAnswer(BaseModel):
    text: str = Field(min_length=1, max_length=120)
    cites: list[str] = Field(min_length=1, max_length=MODEL_CITES)


class AnalystAnswer(BaseModel):
    # direction first: the model commits to a view, then supports it
    direction: Direction
    confidence: float = Field(ge=0.0, le=1.0)
    insights: list[InsightAnswer] = Field(min_length=1, max_length=MODEL_INSIGHTS)

    def cited(self) -> Iterable[str]:
        return (c for i in self.insights for c in i.cites)


class TickerAnswer(BaseModel):
    """Single-ticker manager: buy (long), sell (short) or hold, with a size."""

    action: Action
    size: float = Field(ge=0.0, le=1.0)
    rationale: str = Field(min_length=1, max_length=200)
    relied_on: list[str] = Field(max_length=3)

    def cited(self) -> Iterable[str]:
        return iter(self.relied_on)


def _field(ticker: str) -> str:
    return "t_" + re.sub(r"[^A-Za-z0-9]", "_", ticker)


class _PortfolioBase(BaseModel):
    rationale: str = Field(min_length=1, max_length=200)
    relied_on: list[str] = Field(max_length=3)

    def cited(self) -> Iterable[str]:
        return iter(self.relied_on)

    def directions(self) -> dict[str, Action]:
        return {f.alias: getattr(self, name) for name, f in type(self).model_fields.items() if f.alias}


def portfolio_answer_model(tickers: Sequence[str]) -> type[_PortfolioBase]:
    """Portfolio manager: one buy/sell/hold per ticker, as an object with one
    property per ticker (the shape a small model fills most reliably)."""
    fields: dict[str, Any] = {
        _field(t): (Action, Field(alias=t)) for t in tickers
    }
    return create_model("PortfolioAnswer", __base__=_PortfolioBase, **fields)


def checked(model: type[BaseModel], allowed: Iterable[str]) -> type[BaseModel]:
    """``model`` plus the citation check: every id it cites (``cited()``)
    must be in ``allowed``. Same name and JSON schema as ``model``."""
    allowed_set = frozenset(allowed)
    shown = ", ".join(sorted(allowed_set)[:8]) + (" ..." if len(allowed_set) > 8 else "")

    def _cites_only_inputs(self):
        bad = [c for c in self.cited() if c not in allowed_set]
        if bad:
            raise ValueError(f"cites {bad[0]!r}, which is not in your input; cite only these ids: {shown}")
        return self

    return create_model(
        model.__name__, __base__=model, __module__=model.__module__,
        __validators__={"cites_only_inputs": model_validator(mode="after")(_cites_only_inputs)},
    )


def citations_for(ids: Iterable[str], items: Mapping[str, Any]) -> list[Citation]:
    """Full citations for ``ids`` looked up in the agent's input items
    (anything with ``id``, ``date`` and ``source``)."""
    out = []
    for i in dict.fromkeys(ids):
        it = items.get(i)
        if it is not None:
            out.append(Citation(id=it.id, date=it.date, source=it.source))
    return out
