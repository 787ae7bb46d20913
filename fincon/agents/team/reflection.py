"""The manager's self-reflection on a settled decision (FinCon's episodic
memory): written by the model with the llm brain, by a fixed template with
the rules brain (labelled as such, so no reader mistakes it for a model's).

A reflection is asked only on a losing day or a CVaR-alert day, the days
the manager has to learn from. An invalid answer (after the client's re-ask
and re-sample) falls back to the template text, labelled and counted.
May touch: the brain (one question); nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from fincon.agents.brains import Answer, Question
from fincon.agents.reports import foreign_script
from fincon.agents.roles.base import EMPTY, drop_empty, load_template
from fincon.memory.distill import uncut

TEMPLATE = Path(__file__).with_name("reflection.txt")
#: the label of a reflection the rules brain wrote (its own deterministic text)
RULES_LABEL = "[deterministic reflection] "
#: the label of a reflection the model failed to write (the template text stands in)
FALLBACK_LABEL = "[deterministic reflection: the model's answer was invalid] "


#: the longest reflection the model may write (a schema cap): two sentences.
#: The 1.5B model writes up to the cap (600 chars was ~145 tokens, ~9 s of a
#: day's ~50 s on 2 cores); a longer text ran into it mid-sentence anyway
REFLECTION_CAP = 280


class ReflectionAnswer(BaseModel):
    reflection: str = Field(min_length=20, max_length=REFLECTION_CAP)

    @field_validator("reflection")
    @classmethod
    def _english(cls, v: str) -> str:
        ch = foreign_script(v)
        if ch is not None:
            raise ValueError(f"language: write in English, as the prompt is; found {ch!r}")
        return v.strip()

    def cited(self):
        return ()


@dataclass(frozen=True)
class Outcome:
    """A settled decision: what was done, why, and what it made."""

    day: str
    settled: str
    actions: str
    rationale: str
    gross: float
    pnl: float
    alert: str = ""

    @property
    def verdict(self) -> str:
        return "profitable" if self.pnl > 0 else "a loss" if self.pnl < 0 else "flat"

    def summary(self) -> str:
        """The manager's procedural memory entry: the decision and what it made."""
        why = f" Why: {self.rationale}" if self.rationale else ""
        return (
            f"{self.day}: {self.actions or 'no trade'} (gross exposure {self.gross:.2f}); by {self.settled} "
            f"{self.verdict} ({self.pnl:+.2%}).{why}"
        )

    def template(self, relied: str) -> str:
        """The deterministic text: the facts, no judgement."""
        text = (
            f"{self.day}: {self.actions or 'no trade'} (gross exposure {self.gross:.2f}); by {self.settled} this "
            f"was {self.verdict} ({self.pnl:+.2%}). Relied on: {relied or 'no memory'}."
        )
        if self.alert:
            text += f" CVaR alert: {self.alert}; be more careful with exposure."
        return text


def messages(o: Outcome) -> list[dict[str, str]]:
    system, user = load_template(str(TEMPLATE))
    values = {
        "day": o.day,
        "settled": o.settled,
        "actions": o.actions or "no trade",
        "gross": f"{o.gross:.2f}",
        "rationale": o.rationale or "(none given)",
        "verdict": o.verdict,
        "pnl": f"{o.pnl:+.2%}",
        "alert": f"A CVaR alert fired: {o.alert}." if o.alert else EMPTY,
    }
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": drop_empty(user.format(**values))},
    ]


def reflect(brain, o: Outcome, relied: str, *, agent: str, llm: bool) -> tuple[str, Answer]:
    """The reflection's text and how it was obtained. The model's text is
    followed by the facts in brackets, so a reader of the memory sees both."""
    facts = o.template(relied)
    if not llm:
        return RULES_LABEL + facts, Answer(None, "rules")
    q = Question(
        agent=f"{agent}/reflection",
        day=o.settled,
        messages=lambda: messages(o),
        model=ReflectionAnswer,
        allowed=frozenset(),
        to_report=lambda a: a,
        rules=lambda: ReflectionAnswer(reflection=facts),
    )
    ans = brain.answer(q)
    if ans.via != "llm":
        return FALLBACK_LABEL + facts, ans
    # an answer that ran into the cap keeps its whole sentences (no cut text in a later prompt)
    return f"{uncut(ans.report.reflection, REFLECTION_CAP)} [{facts}]", ans
