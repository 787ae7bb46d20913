"""Two brains behind one call: a question in, a validated report out.

A :class:`Question` is what a role (or the manager) asks on one day: the
chat messages for a model, the answer schema a model fills, the ids it may
cite, how to turn a model answer into the role's report, and the role's
deterministic answer. A brain answers it:

* :class:`RulesBrain` returns the deterministic answer (Loughran-McDonald
  tone of the cited memories, scaled momentum, a CVaR penalty; a fixed
  weighting of the analysts in the manager: see :func:`rules_analyst` and
  :func:`rules_manager`). It is a real baseline and runs in milliseconds.
* :class:`LLMBrain` asks the model through :meth:`LLMClient.ask` with the
  schema plus the citation check (:func:`fincon.agents.reports.checked`),
  so an invalid or badly cited answer is re-asked once quoting the error;
  a second failure takes the rules answer, counted with
  ``ledger.record_fallback`` (``llm_audit.jsonl``, run summary).

This is the only module of the team that touches the LLM client.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from pydantic import BaseModel
from pydantic_core import to_json

from fincon.agents.reports import (
    INSIGHT_CHARS,
    AnalystAnswer,
    AnalystReport,
    Citation,
    Insight,
    ManagerReport,
    checked,
    citations_for,
    short_labels,
)
from fincon.agents.roles.base import Item, RoleInputs
from fincon.llm.errors import LLMInvalidAnswer
from fincon.memory.distill import clip_sentences, uncut

if TYPE_CHECKING:  # pragma: no cover
    from fincon.agents.roles.base import Role
    from fincon.llm.client import LLMClient

log = logging.getLogger(__name__)

#: |score| below this is neutral (analysts) or hold (manager)
NEUTRAL_BAND = 0.05
#: |score| at or above this trades full size; between the bands, half size
FULL_SIZE = 0.15


@dataclass(frozen=True)
class Question:
    """``allowed``: the real ids the answer may cite. ``labels`` (label ->
    real id): the short labels the prompt shows instead of the ids
    (:func:`fincon.agents.reports.short_labels`); the model may cite them,
    and :class:`LLMBrain` maps them back to the real ids before
    ``to_report``, so reports only ever hold real ids."""

    agent: str
    day: str
    messages: Callable[[], list[dict[str, str]]]
    model: type[BaseModel]
    allowed: frozenset[str]
    to_report: Callable[[Any], BaseModel]
    rules: Callable[[], BaseModel]
    #: sampling for this question (None: the client's); training lets the manager explore
    params: Any = None
    labels: Mapping[str, str] = field(default_factory=dict)
    #: what the llm brain answers when the model's answer is invalid twice (None: ``rules``).
    #: A check whose rules version knows more than the model was shown (the numeric
    #: critics' formulas) falls back to "could not verify" instead, so a failed model
    #: answer never turns into the rules' right answer
    fallback: Callable[[], BaseModel] | None = None


@dataclass(frozen=True)
class Answer:
    """A report plus how it was obtained: ``via`` is llm, rules or fallback (or reuse, empty);
    ``calls`` counts model calls (a re-ask is a second call); ``of``: a reused report's own ``via``
    when that was a fallback (the rules' report read again), else None."""

    report: Any
    via: str
    calls: int = 0
    keys: tuple[str, ...] = ()
    errors: tuple[str, ...] = field(default_factory=tuple)
    of: str | None = None


# -- the rules -----------------------------------------------------------------


def _label(x: float) -> str:
    return "bullish" if x > NEUTRAL_BAND else "bearish" if x < -NEUTRAL_BAND else "neutral"


def _cite(item: Item) -> Citation:
    return Citation(id=item.id, date=item.date, source=item.source)


def rules_analyst(inputs: RoleInputs) -> AnalystReport:
    """Weighted mean of the items' signals (LM tone of memories, scaled
    momentum), weights = recency/importance; confidence = |mean| lowered by
    the role's risk penalty (data analysis: CVaR). Insights: the items that
    moved the score most, each citing itself."""
    scored = [i for i in inputs.items if i.signal is not None and i.weight > 0]
    wsum = sum(i.weight for i in scored)
    score = sum(i.weight * float(i.signal) for i in scored) / wsum if wsum > 0 else 0.0
    penalty = float(inputs.extra.get("risk_penalty", 0.0))
    direction = _label(score)
    confidence = 0.0 if direction == "neutral" else round(min(1.0, abs(score)) * (1.0 - penalty), 4)
    top = sorted(scored, key=lambda i: (-i.weight * abs(float(i.signal)), i.id))[:4]
    insights = [
        Insight(
            text=f"{clip_sentences(i.text, 300)} -> reads {_label(float(i.signal))} ({float(i.signal):+.2f})",
            citations=[_cite(i)],
        )
        for i in top
    ]
    risk = [i for i in inputs.items if i.signal is None]
    if risk and len(insights) < 5:
        insights.append(
            Insight(
                text=clip_sentences("; ".join(i.text for i in risk), 300)
                + (f" -> confidence cut by {penalty:.0%}" if penalty else ""),
                citations=[_cite(i) for i in risk[:3]],
            )
        )
    return AnalystReport(
        role=inputs.role, ticker=inputs.ticker, insights=insights, direction=direction, confidence=confidence
    )


def llm_to_report(inputs: RoleInputs, answer: AnalystAnswer) -> AnalystReport:
    items = inputs.by_id()
    return AnalystReport(
        role=inputs.role,
        ticker=inputs.ticker,
        direction=answer.direction,
        confidence=answer.confidence,
        # the schema caps an insight's length, so an answer that ran into the cap stopped mid-sentence:
        # keep its whole sentences (an answer below the cap is the model's own ending)
        insights=[
            Insight(
                text=uncut(i.text, INSIGHT_CHARS),
                citations=citations_for(i.cites, items),
            )
            for i in answer.insights
        ],
    )


@dataclass(frozen=True)
class ManagerTask:
    """What the manager decides from (filled by the protocol)."""

    day: str
    tickers: tuple[str, ...]
    reports: Mapping[str, Sequence[AnalystReport]]  # ticker -> analyst reports
    weights: Mapping[str, float]  # role -> weight in the rules manager
    reflections: tuple[str, ...] = ()
    #: the manager's past decisions with their outcomes, most relevant first (its procedural memory)
    decisions: tuple[str, ...] = ()
    stance: str = ""
    beliefs: str = ""
    #: the book's weights as held; the manager decides from :meth:`held`
    position: Mapping[str, float] = field(default_factory=dict)
    #: share of its usual exposure the rules manager keeps (below 1 on a CVaR alert day)
    exposure: float = 1.0
    #: consolidated-evidence margin (score units, [-1, 1]) beyond the neutral band a held
    #: position needs against it before the rules manager reverses it (no whipsaw on every day's tone)
    hold_band: float = 0.0
    #: per ticker, the cost of trading one unit of the book today (commission + slippage, a
    #: fraction of value traded, from the run's cost models); a ticker not named costs nothing
    unit_cost: Mapping[str, float] = field(default_factory=dict)

    @property
    def portfolio(self) -> bool:
        return len(self.tickers) > 1

    def held(self, ticker: str) -> float:
        """The position the manager decides from, as its prompt says it: one stock's to a tenth (a
        long cut below a twentieth by risk alerts reads as none, and a signal opens it again at full
        size), a portfolio's to a hundredth: its "hold" means no position, and a weight under a
        twentieth (most of the paper form's) read as none was closed where the rules keep a held side."""
        w = float(self.position.get(ticker, 0.0))
        return round(w, 2) if self.portfolio else round(w, 1)

    def cited(self) -> list[str]:
        return list(dict.fromkeys(c for t in self.tickers for r in self.reports.get(t, ()) for c in r.cited_ids()))


def consensus(task: ManagerTask, ticker: str) -> tuple[float, list[str]]:
    """Fixed weighting: sum of role weight x signed confidence over the
    analysts that had something to read, normalised by their weights."""
    num = den = 0.0
    parts = []
    for r in task.reports.get(ticker, ()):
        if not r.insights:
            continue
        w = float(task.weights.get(r.role, 0.0))
        if w <= 0:
            continue
        num += w * r.signed
        den += w
        parts.append(f"{r.role} {r.direction} {r.confidence:.2f}")
    return (num / den if den > 0 else 0.0), parts


#: score units of extra evidence per unit of trading cost (a fraction of value): a flip of a full
#: position trades 2 units, so 10 bps a side asks for 25 x 0.001 x 2 = 0.05 more evidence
COST_WEIGHT = 25.0


def rules_manager(task: ManagerTask) -> ManagerReport:
    """Weighted consensus per ticker -> buy / sell / hold. Opening a position
    needs the score beyond the neutral band plus the cost of the trade;
    reversing a held one needs it beyond the band, ``hold_band`` and the
    cost of the flip on the other side; anything less keeps the position
    ("hold"), so a day's change of tone alone does not trade."""
    actions: dict[str, str] = {}
    notes, sizes = [], []
    relied: dict[str, list[str]] = {}
    for t in task.tickers:
        score, parts = consensus(task, t)
        held = task.held(t)
        h = (held > 0) - (held < 0)
        want = "buy" if score > 0 else "sell"
        units = 1.0 if h == 0 else 2.0  # a reversal sells the held unit and buys the other side
        need = NEUTRAL_BAND + (task.hold_band if h else 0.0) + COST_WEIGHT * task.unit_cost.get(t, 0.0) * units
        # keeping: a single stock's "hold" keeps what is held; in a portfolio "hold" means no
        # position, so a kept position is restated as its direction
        keep = "hold" if not task.portfolio or h == 0 else ("buy" if h > 0 else "sell")
        a = want if abs(score) > need and (h == 0 or h * score < 0) else keep
        actions[t] = a
        sizes.append(1.0 if abs(score) >= FULL_SIZE else 0.5)
        why = f" (needs {need:.2f} against the held side)" if h and a == "hold" and h * score < 0 else ""
        notes.append(f"{t}: weighted view {score:+.2f} ({', '.join(parts) or 'no evidence'}) -> {a}{why}")
        if a != "hold":
            want = "bullish" if a == "buy" else "bearish"
            agree = sorted(
                (r for r in task.reports.get(t, ()) if r.direction == want),
                key=lambda r: (-task.weights.get(r.role, 0.0) * r.confidence, r.role),
            )
            relied[t] = list(dict.fromkeys(c for r in agree for c in r.cited_ids()[:2]))[:RELIED_PER_TICKER]
    size = sizes[0] if len(task.tickers) == 1 and actions[task.tickers[0]] != "hold" else 1.0
    if task.exposure < 1.0:
        # risk-averse stance (CVaR alert): keep only part of the usual exposure; a single stock held
        # through a "hold" is cut to that part of the size its view asks for, and no further (cut from
        # what was held, alert days compounded: a short of 0.45 of the book became 0.05)
        cut = ""
        t = task.tickers[0]
        held = float(task.position.get(t, 0.0))
        if len(task.tickers) == 1 and actions[t] == "hold" and task.held(t):
            side = "long" if held > 0 else "short"
            if abs(held) > sizes[0] * task.exposure:
                actions[t], size = ("buy" if held > 0 else "sell"), sizes[0]
                # the note says what the day does: the kept position is restated, smaller
                notes[0] = notes[0].replace("-> hold", f"-> {actions[t]}", 1)
                cut = f" (the held {side} is kept, smaller)"
            else:
                cut = f" (the held {side}, {abs(held):.0%} of the book, is within it already)"
        size = round(size * task.exposure, 6)
        notes.append(f"risk alert: exposure cut to {task.exposure:.0%}{cut}")
    # each traded ticker's own, in the tickers' sorted order: one cap for the day gave every slot to the
    # first ticker given (--tickers TSLA,MSFT,AAPL: AAPL held 39 days on no evidence of its own, and its
    # memories never rewarded), so the order of --tickers changed the trades (found in review)
    cited = list(dict.fromkeys(c for t in sorted(relied) for c in relied[t]))
    return ManagerReport(actions=actions, size=size, rationale="; ".join(notes)[:600], relied_on=cited)


#: the items the rules manager relies on for each ticker it trades (its top reports' first two each)
RELIED_PER_TICKER = 5


def hold_band_check(task: ManagerTask, report: ManagerReport) -> tuple[ManagerReport, str | None]:
    """The manager's stated threshold, applied to any brain's single-stock
    answer: reversing a held position needs the consolidated view (the rules
    weighting of the same reports) beyond the neutral band, ``hold_band`` and
    the cost of the flip against the held side; a reversal with less evidence
    keeps the position ("hold"), with a note. Off at ``hold_band`` 0; the
    rules manager already decides this way, so it only ever changes a model's answer."""
    if task.portfolio or task.hold_band <= 0:
        return report, None
    t = task.tickers[0]
    held = task.held(t)
    h = (held > 0) - (held < 0)
    a = report.actions.get(t, "hold")
    if h == 0 or a == "hold" or (a == "buy") == (h > 0):
        return report, None
    score, _ = consensus(task, t)
    need = NEUTRAL_BAND + task.hold_band + COST_WEIGHT * task.unit_cost.get(t, 0.0) * 2.0
    if abs(score) > need and h * score < 0:
        return report, None
    note = (
        f"hold band: kept the held {'long' if h > 0 else 'short'}; a reversal needs the consolidated view "
        f"beyond {need:.2f} against it (it is {score:+.2f})"
    )
    return report.model_copy(update={"actions": {t: "hold"}}), note


# -- the brains ----------------------------------------------------------------


class RulesBrain:
    name = "rules"

    def answer(self, q: Question) -> Answer:
        return Answer(q.rules(), "rules")


class Reuse:
    """Answers with a report given in advance: an agent whose inputs hash
    like its previous call's gets that call's report back, no model call."""

    name = "reuse"

    def __init__(self, report: Any):
        self.report = report

    def answer(self, q: Question) -> Answer:
        return Answer(self.report, "reuse")


class LLMBrain:
    """Model answers with the citation check; the rules brain as the counted fallback."""

    name = "llm"

    def __init__(self, client: "LLMClient"):
        self.client = client

    def answer(self, q: Question) -> Answer:
        labels = {k: v for k, v in q.labels.items() if v in q.allowed}
        model = checked(q.model, set(q.allowed) | set(labels), sorted(labels, key=_natural) if labels else None)
        try:
            res = self.client.ask(q.messages(), model, agent=q.agent, day=q.day, params=q.params)
        except LLMInvalidAnswer as exc:
            used = "rules brain used" if q.fallback is None else "not verified"
            self.client.ledger.record_fallback(
                q.agent,
                q.day,
                reason=f"invalid or badly cited answer after one re-ask; {used}",
                keys=exc.keys,
                detail={"errors": list(exc.errors)},
            )
            log.warning("%s: model answer invalid twice; %s", f"{q.day} {q.agent}" if q.day else q.agent, used)
            report = (q.fallback or q.rules)()
            if self.client.masker is not None:  # a rules report quotes its items: reworded in later prompts
                self.client.masker.said(to_json(report).decode(), q.day)  # a model, or a debate's list
            return Answer(report, "fallback", len(exc.keys), exc.keys, tuple(exc.errors))
        value = res.value.relabeled(labels) if labels else res.value
        return Answer(q.to_report(value), "llm", res.usage.calls, res.keys)


def _natural(label: str) -> tuple[str, int]:
    """E2 before E10."""
    head = label.rstrip("0123456789")
    return head, int(label[len(head) :] or 0)


def analyst_question(role: "Role", inputs: RoleInputs) -> Question:
    """The prompt shows the items under short labels (E1, E2 ...), the answer
    cites them, the report cites the real ids."""
    labels = short_labels(i.id for i in inputs.items)
    return Question(
        agent=inputs.agent,
        day=inputs.day,
        messages=lambda: role.messages(inputs, labels),
        model=AnalystAnswer,
        allowed=frozenset(i.id for i in inputs.items),
        to_report=lambda a: llm_to_report(inputs, a),
        rules=lambda: rules_analyst(inputs),
        labels={v: k for k, v in labels.items()},
    )
