"""``scm`` schemas: what the model fills (the answer models, one per role,
validated by the brain) and what the protocol keeps (alternatives, issues,
the verdict, the day's final report and its log).

Only pydantic models and their small helpers live here: no model call, no
prompt, no check. Any scm module may import this one; it imports nothing of
the protocol's.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Iterable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from fincon.agents.reports import Citation, _field, _real

NAMES = ("A", "B", "C")
CATEGORIES = ("evidence", "policy", "consistency", "calibration", "risks")
SEVERITIES = ("high", "medium", "low")
EPS = 1e-9

Name = Literal["A", "B", "C"]
Category = Literal["evidence", "policy", "consistency", "calibration", "risks"]
Severity = Literal["high", "medium", "low"]


# -- what the model fills -------------------------------------------------------


class _AltBase(BaseModel):
    name: Name
    evidence: list[str] = Field(default_factory=list, max_length=3, examples=[["E1"]])
    rule: str = Field(min_length=1, max_length=160)
    #: no bounds in the answer schema: a model that states a negative gross for a short
    #: (the bundled 1.5B did, live) makes an arithmetic error that the code check
    #: ("stated gross ... but the weights sum to ...") flags and the fix round repairs,
    #: as the protocol intends, instead of a schema error that throws the whole sample away
    gross: float = Field(description="sum of the absolute weights")
    p5: float = Field(description="5th percentile of the next day's return, %")
    p50: float = Field(description="median of the next day's return, %")
    p95: float = Field(description="95th percentile of the next day's return, %")
    risks: list[str] = Field(default_factory=list, max_length=2)

    def target(self) -> dict[str, float]:
        w = self.weights
        return {f.alias: float(getattr(w, n)) for n, f in type(w).model_fields.items() if f.alias}


class _ProposalBase(BaseModel):
    def cited(self) -> Iterable[str]:
        return (c for a in self.alternatives for c in a.evidence)

    def relabeled(self, back: Mapping[str, str]):
        return self.model_copy(
            update={
                "alternatives": [a.model_copy(update={"evidence": _real(a.evidence, back)}) for a in self.alternatives]
            }
        )


@lru_cache(maxsize=64)
def proposal_model(tickers: tuple[str, ...]) -> type[_ProposalBase]:
    """Strategist (and fix) answer: 2-3 alternatives, one weight property per ticker."""
    weights = create_model("Weights", **{_field(t): (float, Field(alias=t, ge=-1.0, le=1.0)) for t in tickers})
    alt = create_model("Alternative", __base__=_AltBase, weights=(weights, ...))
    return create_model("Proposal", __base__=_ProposalBase, alternatives=(list[alt], Field(min_length=2, max_length=3)))


class IssueAnswer(BaseModel):
    alternative: Name
    category: Category
    severity: Severity
    issue: str = Field(min_length=1, max_length=100)
    question: str = Field(min_length=1, max_length=100, description="a verification question the reports answer")


class CritiqueAnswer(BaseModel):
    #: three short issues fit the team's 320-token answer cap (six long ones were cut
    #: off mid-string in a live 1.5B run: invalid JSON twice, a counted fallback);
    #: the code checks add their own issues beside the Critic's
    issues: list[IssueAnswer] = Field(default_factory=list, max_length=3)

    @model_validator(mode="before")
    @classmethod
    def _said(cls, data: Any) -> Any:
        """An answer without "issues" (``{}``, or ``{"Issues": [...]}`` with a high-severity issue) read as
        "no issue", no fallback counted: the key must be there (``[]`` says none) and no other. Checked
        here, not in the schema the model is shown (the recorded days' prompts and keys stay as they were)."""
        if isinstance(data, dict) and set(data) != {"issues"}:
            other = sorted(set(data) - {"issues"})
            raise ValueError(f"answer with the key issues only (found {', '.join(other) or 'none'})")
        return data

    def cited(self) -> Iterable[str]:
        return iter(())

    def relabeled(self, back: Mapping[str, str]):
        return self


class DiscardAnswer(BaseModel):
    alternative: Name
    reason: str = Field(min_length=1, max_length=140)


class ModeratorAnswer(BaseModel):
    discard: list[DiscardAnswer] = Field(default_factory=list, max_length=3)
    choice: Literal["A", "B", "C", "none"]
    rationale: str = Field(min_length=1, max_length=240)
    relied_on: list[str] = Field(default_factory=list, max_length=3)

    def cited(self) -> Iterable[str]:
        return iter(self.relied_on)

    def relabeled(self, back: Mapping[str, str]):
        return self.model_copy(update={"relied_on": _real(self.relied_on, back)})


class CheckAnswer(BaseModel):
    issue: str = Field(examples=["Q1"], description="the issue's label")
    answer: str = Field(min_length=1, max_length=160, description="the question answered from the evidence")
    passes: bool = Field(description="the revised alternative now passes this check")
    cites: list[str] = Field(default_factory=list, max_length=2, examples=[["E1"]])


class VerifyAnswer(BaseModel):
    """The chain-of-verification round: each question answered against the evidence."""

    checks: list[CheckAnswer] = Field(min_length=1, max_length=6)

    def cited(self) -> Iterable[str]:
        return (c for x in self.checks for c in x.cites)

    def relabeled(self, back: Mapping[str, str]):
        return self.model_copy(
            update={"checks": [x.model_copy(update={"cites": _real(x.cites, back)}) for x in self.checks]}
        )


# -- what the protocol keeps ---------------------------------------------------


class Alternative(BaseModel):
    """One decision option, the five sections plus where it came from."""

    model_config = ConfigDict(extra="forbid")

    name: str
    evidence: list[Citation] = Field(default_factory=list)
    #: cited ids that were not in the day's reports (kept to be criticised, never traded on)
    invalid: list[str] = Field(default_factory=list)
    rule: str = ""
    weights: dict[str, float] = Field(default_factory=dict)
    gross: float = 0.0
    p5: float = 0.0
    p50: float = 0.0
    p95: float = 0.0
    risks: list[str] = Field(default_factory=list)
    origin: list[str] = Field(default_factory=list)  # "s<sample>.<name>" it was proposed as
    concordance: float = 0.0

    @property
    def trades(self) -> bool:
        return any(abs(x) > EPS for x in self.weights.values())

    def key(self) -> tuple:
        return tuple(sorted((t, round(x, 3)) for t, x in self.weights.items()))

    def sections(self) -> dict[str, bool]:
        return {
            "evidence": bool(self.evidence) or not self.trades,
            "rule": bool(self.rule.strip()),
            "figures": bool(self.weights),
            "uncertainty": all(map(math.isfinite, (self.p5, self.p50, self.p95))),
            "risks": bool(self.risks),
        }

    def brief(self, label: Mapping[str, str] | None = None) -> str:
        label = label or {}
        w = ", ".join(f"{t} {x:+.2f}" for t, x in self.weights.items())
        ev = ", ".join(label.get(c.id, c.id) for c in self.evidence) + (
            (", " if self.evidence else "") + ", ".join(self.invalid) if self.invalid else ""
        )
        return (
            f"{self.name}: weights {w} (gross {self.gross:.2f}); P5 {self.p5:+.2f}% P50 {self.p50:+.2f}% "
            f"P95 {self.p95:+.2f}%; evidence {ev or 'none'}; rule: {self.rule}; "
            f"risks: {'; '.join(self.risks) or 'none'}"
        )


class Proposal(BaseModel):
    alternatives: list[Alternative]


class Issue(BaseModel):
    model_config = ConfigDict(extra="forbid")

    alternative: str
    category: str
    severity: str
    issue: str
    question: str = ""
    by: str = "code"  # code | critic
    check: str = ""  # the code check that found it
    stage: str = "proposal"  # proposal | revision
    status: str = "open"  # open | fixed | unresolved | noted
    #: the verification question answered on the revised alternative (critic issues)
    answer: str = ""
    answer_cites: list[str] = Field(default_factory=list)
    rechecked_by: str = ""  # code | model | rules (the verifier that answered) | fallback (none did)


class Critique(BaseModel):
    issues: list[Issue] = Field(default_factory=list)


class Verdict(BaseModel):
    discard: list[dict[str, str]] = Field(default_factory=list)
    choice: str = "none"
    rationale: str = ""
    relied_on: list[str] = Field(default_factory=list)


class ScmReport(BaseModel):
    """The day's final report (what a :class:`Reuse` brain gives back) and its log."""

    model_config = ConfigDict(extra="forbid")

    actions: dict[str, str]
    weights: dict[str, float] = Field(default_factory=dict)  # empty: hold, positions kept
    held: bool = False
    chosen: str | None = None
    rationale: str = ""
    relied_on: list[str] = Field(default_factory=list)
    p5: float = 0.0
    p50: float = 0.0
    p95: float = 0.0
    proposals: list[dict[str, Any]] = Field(default_factory=list)
    alternatives: list[dict[str, Any]] = Field(default_factory=list)
    critiques: list[dict[str, Any]] = Field(default_factory=list)
    fixes: list[dict[str, Any]] = Field(default_factory=list)
    log: list[dict[str, Any]] = Field(default_factory=list)
    stable: bool = True
    #: self-consistency: the samples' majority direction per ticker, and the share of samples agreeing with it
    majority: dict[str, int] = Field(default_factory=dict)
    agreement: float = 1.0
    steps: dict[str, str] = Field(default_factory=dict)  # role -> via
