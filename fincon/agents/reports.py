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

Short labels: a prompt may show its items as ``[E1]``, ``[E2]`` ... instead
of their ids (:func:`short_labels`). A memory id such as
``mem-TSLA-news-20221005-1`` is 16 tokens for the Qwen tokenizer, paid once
per item in the prompt and again, at ~6x the cost of a prompt token, for
every citation the model writes; ``E1`` is 2. The answer's labels are mapped
back to the real ids (``relabeled``) before anything is stored, so reports,
``decisions.jsonl`` and ``fincon explain`` only ever hold real ids.

The citation check runs *inside* pydantic validation (:func:`checked`
builds a subclass with the day's allowed ids), so an answer citing an id that
was not in the agent's input fails like any other schema error: the LLM
client re-asks once quoting the error, then raises ``LLMInvalidAnswer`` and
the agent takes the counted rules-brain fallback. The subclass keeps the
base's name and JSON schema, so cache keys do not depend on the check.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any, Iterable, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

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
#: hold. Completion tokens are the slow part of a local call (~64 ms each
#: for the 1.5B model on 2 cores, against ~9 ms for a prompt token), so an
#: analyst writes one insight citing one or two items
MODEL_INSIGHTS = 1
MODEL_CITES = 2
INSIGHT_CHARS = 160
#: the label prefix of :func:`short_labels`; the schema sketch shows it as the example
LABEL = "E"


def short_labels(ids: Iterable[str], prefix: str = LABEL) -> dict[str, str]:
    """Real id -> short label (``E1``, ``E2`` ... in the given order). Empty
    (so the prompt shows the real ids) if a label would equal one of the
    ids, which would make an answer citing it ambiguous."""
    ids = list(dict.fromkeys(ids))
    labels = {i: f"{prefix}{n}" for n, i in enumerate(ids, 1)}
    return {} if set(labels.values()) & set(ids) else labels


def _real(ids: Iterable[str], back: Mapping[str, str]) -> list[str]:
    return list(dict.fromkeys(back.get(i, i) for i in ids))


#: markers the re-ask errors start with, so a run can count why it re-asked
CONTRADICTION = "contradiction"
LANGUAGE = "language"


def foreign_script(text: str) -> str | None:
    """The first letter of ``text`` outside the Latin script (the prompts are
    English: a small model drifting into Chinese mid-answer is re-asked)."""

    for ch in text:
        if ch.isalpha() and not ch.isascii() and not unicodedata.name(ch, "").startswith("LATIN"):
            return ch
    return None


def _english(v: str) -> str:
    ch = foreign_script(v)
    if ch is not None:
        raise ValueError(f"{LANGUAGE}: write in English, as the prompt is; found {ch!r}")
    return v


class InsightAnswer(BaseModel):
    text: str = Field(min_length=1, max_length=INSIGHT_CHARS)
    cites: list[str] = Field(min_length=1, max_length=MODEL_CITES, examples=[[f"{LABEL}1"]])

    _text_english = field_validator("text")(classmethod(lambda cls, v: _english(v)))


class AnalystAnswer(BaseModel):
    # direction first: the model commits to a view, then supports it
    direction: Direction
    confidence: float = Field(ge=0.0, le=1.0)
    insights: list[InsightAnswer] = Field(min_length=1, max_length=MODEL_INSIGHTS)

    def cited(self) -> Iterable[str]:
        return (c for i in self.insights for c in i.cites)

    def relabeled(self, back: Mapping[str, str]):
        """A copy citing real ids (``back``: label -> id; other ids are kept)."""
        return self.model_copy(
            update={"insights": [i.model_copy(update={"cites": _real(i.cites, back)}) for i in self.insights]}
        )


class TickerAnswer(BaseModel):
    """Single-ticker manager: buy (long), sell (short) or hold, with a size."""

    action: Action
    # the schema says above 0 (a local model's grammar then cannot write "sell" with size 0,
    # .llm.backends.grammar); the validator still accepts 0 with hold from a remote endpoint
    size: float = Field(ge=0.0, le=1.0, json_schema_extra={"exclusiveMinimum": 0.0})
    rationale: str = Field(min_length=1, max_length=200)
    relied_on: list[str] = Field(max_length=3, examples=[[f"{LABEL}1"]])

    _rationale_english = field_validator("rationale")(classmethod(lambda cls, v: _english(v)))

    @model_validator(mode="after")
    def _consistent(self):
        # "buy" with size 0 says two things (the team would stay flat while its log says buy)
        if self.action in ("buy", "sell") and self.size <= 0.0:
            raise ValueError(
                f"{CONTRADICTION}: action {self.action!r} with size 0; give the size of the "
                f"position to hold (above 0), or answer hold"
            )
        return self

    def cited(self) -> Iterable[str]:
        return iter(self.relied_on)

    def relabeled(self, back: Mapping[str, str]):
        return self.model_copy(update={"relied_on": _real(self.relied_on, back)})


def ticker_answer_model(shown: Sequence[str]) -> type[TickerAnswer]:
    """:class:`TickerAnswer` whose ``relied_on`` may name only the evidence
    labels the prompt shows (an enum, so a local model's grammar cannot write
    another id, and a remote endpoint's structured output neither). A 1.5B
    manager on real MSFT cited ids it found in its own reflections ("10-q",
    "mem-MSFT-news-...") and was re-asked on most days.

    One class per label list, built once: labels repeat from day to day
    (``E1``..``En``), and building a pydantic model every day was a tenth of
    a rules-brain team day."""
    return _ticker_answer_model(tuple(dict.fromkeys(shown)))


@functools.lru_cache(maxsize=256)
def _ticker_answer_model(shown: tuple[str, ...]) -> type[TickerAnswer]:
    if not shown:
        item: Any = str
        cap = 0
    else:
        item = Literal[tuple(shown)]  # type: ignore[valid-type]
        cap = 3
    return create_model(
        "TickerAnswer",
        __base__=TickerAnswer,
        __module__=TickerAnswer.__module__,
        relied_on=(list[item], Field(max_length=cap, examples=[list(shown[:1])])),
    )


def _field(ticker: str) -> str:
    return "t_" + re.sub(r"[^A-Za-z0-9]", "_", ticker)


class _PortfolioBase(BaseModel):
    rationale: str = Field(min_length=1, max_length=200)
    relied_on: list[str] = Field(max_length=3, examples=[[f"{LABEL}1"]])

    _rationale_english = field_validator("rationale")(classmethod(lambda cls, v: _english(v)))

    def cited(self) -> Iterable[str]:
        return iter(self.relied_on)

    def relabeled(self, back: Mapping[str, str]):
        return self.model_copy(update={"relied_on": _real(self.relied_on, back)})

    def directions(self) -> dict[str, Action]:
        return {f.alias: getattr(self, name) for name, f in type(self).model_fields.items() if f.alias}

    @model_validator(mode="after")
    def _consistent(self):
        # a buy or sell with nothing invested says two things (as TickerAnswer's size 0)
        size = getattr(self, "size", None)
        if size is not None and size <= 0.0 and any(a != "hold" for a in self.directions().values()):
            raise ValueError(
                f"{CONTRADICTION}: buy or sell with size 0; give the share of the book to invest "
                f"(above 0), or answer hold for every stock"
            )
        return self


def portfolio_answer_model(tickers: Sequence[str]) -> type[_PortfolioBase]:
    """Portfolio manager: one buy/sell/hold per ticker, as an object with one
    property per ticker (the shape a small model fills most reliably)."""
    fields: dict[str, Any] = {_field(t): (Action, Field(alias=t)) for t in tickers}
    # after the directions: the share of the book the manager invests (the llm brain chooses its size)
    fields["size"] = (float, Field(ge=0.0, le=1.0))
    return create_model("PortfolioAnswer", __base__=_PortfolioBase, **fields)


def checked(model: type[BaseModel], allowed: Iterable[str], shown: Sequence[str] | None = None) -> type[BaseModel]:
    """``model`` plus the citation check: every id it cites (``cited()``)
    must be in ``allowed``. Same name and JSON schema as ``model``. The error
    (quoted in the re-ask) lists ``shown``, default the allowed ids: the
    labels, when the prompt showed labels."""
    allowed_set = frozenset(allowed)
    names = list(shown) if shown is not None else sorted(allowed_set)
    shown = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")

    def _cites_only_inputs(self):
        bad = [c for c in self.cited() if c not in allowed_set]
        if bad:
            raise ValueError(f"cites {bad[0]!r}, which is not in your input; cite only these ids: {shown}")
        return self

    return create_model(
        model.__name__,
        __base__=model,
        __module__=model.__module__,
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
