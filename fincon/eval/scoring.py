"""The scoring harness of the numeric critics' evaluations: ``fincon eval
numeric`` on the bundled filings (:mod:`fincon.eval.numeric`) and on
FinQA's published format (:mod:`fincon.eval.finqa`) run the same pipeline
and tabulate it the same way, so it is written once, here.

The pipeline (after Fatemi & Hu), per question: the analyst answers (the
figures it took and its result: :class:`Attempt`); the critics review the
answer; each critic row whose critics found a fault has the analyst revise
with their feedback (:func:`feedback`), the others keep the answer
(:func:`evaluate`). A question the analyst does not answer is wrong in
every row and flagged in none. Model calls, invalid answers and reviews
that could not be verified are counted, never hidden.

What stays with each evaluation: its items, its prompts, how its critics
review an answer, and how an answer is scored (exact match at the
question's precision; FinQA's execution accuracy). :func:`table` tallies
one row per setting of :data:`ROWS` with the evaluation's own right-or-wrong
and grouping; the evaluation lays out the row's columns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from pydantic import BaseModel

from fincon.agents.brains import LLMBrain, Question, RulesBrain
from fincon.agents.roles.base import load_template
from fincon.eval.progress import each

#: the paper's three settings: (key of an outcome's answers, label of the row)
ROWS = (
    ("alone", "analyst alone"),
    ("extraction", "+ extraction critic"),
    ("both", "+ extraction + calculation critics"),
)
#: the critic rows and the critics' stages whose feedback their revision hears
CRITIC_ROWS = (("extraction", ("extraction",)), ("both", ("extraction", "calculation")))


@dataclass(frozen=True)
class Attempt:
    """An analyst's answer: the figures it took and its result."""

    figures: dict[str, float]
    answer: float | None


@dataclass
class Outcome:
    """One question's answer and whether a critic flagged it, per row key."""

    item: Any
    answers: dict[str, float | None]
    flagged: dict[str, bool]


def make_brain(brain_name: str, client: Any = None) -> Any:
    """The brain of ``--brain``: ``llm`` asks the model through ``client``,
    anything else is the deterministic rules brain."""
    if brain_name == "llm":
        return LLMBrain(client)
    return RulesBrain()


def template_question(
    template: str | Path,
    agent: str,
    model: type[BaseModel],
    to_report: Callable[[Any], Any],
    rules: Callable[[], Any],
    user: Callable[[], dict[str, Any]],
    system: Callable[[], dict[str, Any]] | None = None,
    allowed: frozenset[str] = frozenset(),
    fallback: Callable[[], Any] | None = None,
) -> Question:
    """A question on a ``[system]``/``[user]`` prompt template: ``user()``
    (and ``system()``, when given) are the fields its part is formatted
    with; a part without fields is sent as written. The fields are computed
    only when the messages are (a rules brain never reads them)."""
    system_text, user_text = load_template(str(template))
    return Question(
        agent=agent,
        day="",
        model=model,
        allowed=allowed,
        to_report=to_report,
        rules=rules,
        fallback=fallback,
        messages=lambda: [
            {"role": "system", "content": system_text if system is None else system_text.format(**system())},
            {"role": "user", "content": user_text.format(**user())},
        ],
    )


def feedback(
    figures: Sequence[tuple[str, float, bool, float | None]],
    calculation: tuple[bool, float | None] | None,
    decimals: int,
    stages: Sequence[str],
) -> str:
    """The critics' feedback a revision reads, for the critics of ``stages``:
    per figure (name, claimed, ok, the document's value or None) its verdict,
    and the calculation critic's (ok, its own result), None if it checked
    nothing; its result shown to ``decimals``."""
    lines = []
    if "extraction" in stages:
        for name, claimed, ok, source in figures:
            verdict = (
                "is right"
                if ok
                else "is not in the document"
                if source is None
                else f"is wrong; the document says {source:g}"
            )
            lines.append(f"- extraction: {name} = {claimed:g} {verdict}")
    if "calculation" in stages and calculation is not None:
        ok, value = calculation
        lines.append(
            "- calculation: right" if ok else f"- calculation: wrong; the critic's own result is {value:.{decimals}f}"
        )
    return "\n".join(lines) or "- no problems found"


def evaluate(
    brain: Any,
    items: Sequence[Any],
    analyst: Callable[[Any], Question],
    critique: Callable[[Any, Attempt, Any], Any],
    revise: Callable[[Any, Attempt, Any, Sequence[str]], Question],
    progress: bool = False,
) -> tuple[list[Outcome], Counter]:
    """Every item through the pipeline. ``analyst(item)``: the analyst's
    question (its report an :class:`Attempt`); ``critique(item, attempt,
    brain)``: the critics' review, with ``calls``, ``fallbacks``,
    ``unverified``, ``extraction_failed`` and ``calculation_failed``;
    ``revise(item, attempt, review, stages)``: the revision's question.
    Returns the outcomes and the usage (``calls``, ``fallbacks``: invalid
    answers, ``unverified``: answers a critic could not verify); ``progress``:
    a bar of the items on stderr."""
    usage: Counter = Counter()
    out = []

    def ask(q: Question):
        ans = brain.answer(q)
        usage["calls"] += ans.calls
        usage["fallbacks"] += ans.via == "fallback"
        return ans.report

    for item in each(items, "questions", progress):
        a0: Attempt = ask(analyst(item))
        answers: dict[str, float | None] = {"alone": a0.answer}
        flagged = {"alone": False}
        if a0.answer is None:
            answers.update(extraction=None, both=None)
            flagged.update(extraction=False, both=False)
            out.append(Outcome(item, answers, flagged))
            continue
        rv = critique(item, a0, brain)
        usage["calls"] += rv.calls
        usage["fallbacks"] += rv.fallbacks
        usage["unverified"] += bool(rv.unverified)
        for row, stages in CRITIC_ROWS:
            bad = rv.extraction_failed or (row == "both" and rv.calculation_failed)
            flagged[row] = bad
            answers[row] = ask(revise(item, a0, rv, stages)).answer if bad else a0.answer
        out.append(Outcome(item, answers, flagged))
    return out, usage


@dataclass(frozen=True)
class RowScore:
    """One row's tally: right or wrong per outcome, (right, questions) per
    group, and how many answers a critic of the row flagged."""

    right: list[bool]
    by_group: dict[Any, tuple[int, int]]
    flagged: int

    @property
    def n(self) -> int:
        return len(self.right)

    @property
    def correct(self) -> int:
        return sum(self.right)

    @property
    def percent(self) -> float:
        """Share right in %, to 0.1 (0.0 for no question)."""
        return round(100.0 * sum(self.right) / len(self.right), 1) if self.right else 0.0


def table(
    outcomes: Sequence[Outcome],
    right: Callable[[float | None, Any], bool],
    group_of: Callable[[Any], Any],
    groups: Sequence[Any],
    cells: Callable[[str, str, RowScore], dict[str, Any]],
) -> list[dict[str, Any]]:
    """One row per setting of :data:`ROWS`: ``right(answer, item)`` scores an
    answer, ``group_of(item)`` is its group among ``groups``; ``cells(key,
    label, score)`` lays out the row."""
    rows = []
    for key, label in ROWS:
        hits = [right(o.answers[key], o.item) for o in outcomes]
        by_group = {
            g: (
                sum(h for h, o in zip(hits, outcomes) if group_of(o.item) == g),
                sum(group_of(o.item) == g for o in outcomes),
            )
            for g in groups
        }
        rows.append(cells(key, label, RowScore(hits, by_group, sum(o.flagged[key] for o in outcomes))))
    return rows


def usage_line(usage: dict[str, int], analyst: str = "") -> str:
    """A report's count of model calls and invalid answers; ``analyst``: what
    an analyst's invalid answer became, when it can have one."""
    return (
        f"model calls {usage.get('calls', 0)}, invalid answers {usage.get('fallbacks', 0)} ({analyst}a critic's: could "
        f"not verify, {usage.get('unverified', 0)} answer{'' if usage.get('unverified', 0) == 1 else 's'})"
    )
