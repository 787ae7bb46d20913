"""The two numeric critics: data extraction, then calculation.

Both are asked through a brain like any agent (:class:`Question`): the
rules brain answers with the deterministic check below, the llm brain asks
the model with the templates beside this module (``extraction.txt``,
``calculation.txt``). When the model's answer is invalid twice the claim is
**not verified** (counted as a fallback and as ``unverified``): never the
rules check, which knows the metrics' definitions the model was not shown,
so a failed model answer cannot turn into a right one.

No prompt carries an answer key: the extraction critic sees the source and
the figures taken; the calculation critic sees the checked figures, what
the result claims to be (the metric's name) and the claimed value, and must
work out the computation itself (no formula).

* **extraction** (:func:`rules_extraction`): every figure a claim was taken
  from (and a claim that is itself a stated figure) must match the figure
  the cited source states for the same metric, up to the rounding of the
  less precise of the two (``$21.5 billion`` matches ``$21.45 billion``).
  A wrong figure is replaced by the source's; a figure whose metric the
  source does not state, and that no formula derives from it, cannot be
  verified: the claim is dropped.
* **calculation** (:func:`rules_calculation`): a derived claim (a growth
  rate, a margin, a difference: :data:`METRICS` with a formula) is
  recomputed in Python from its inputs, as corrected by the extraction
  critic, or from the source's stated figures when the claim names none;
  a result off by more than the claim's rounding is replaced.

:func:`critique` runs them in that order (the paper's three-agent setting:
the calculation critic sees the extraction critic's verdict) and returns a
:class:`Review` per claim: ok, corrected (with the new value) or dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from pydantic import BaseModel, Field

from fincon.agents.brains import Answer, Question
from fincon.agents.critics.claims import (
    METRICS,
    UNLABELLED,
    Claim,
    close,
    figures_in,
    format_value,
    rounded,
    stated_values,
)
from fincon.agents.roles.base import load_template

HERE = Path(__file__).parent
EXTRACTION_TEMPLATE = HERE / "extraction.txt"
CALCULATION_TEMPLATE = HERE / "calculation.txt"
SOURCE_CHARS = 1500  # a source in a critic prompt is cut here


# -- what a critic says ----------------------------------------------------------


@dataclass(frozen=True)
class FigureVerdict:
    metric: str
    claimed: float
    ok: bool
    source_value: float | None = None  # what the source states (None: does not state it)


@dataclass(frozen=True)
class ExtractionVerdict:
    """Per figure (the claim's inputs, then the claim itself when it is a stated figure)."""

    figures: tuple[FigureVerdict, ...]
    #: False: not every figure could be checked (the model's answer invalid twice, or a figure it did not
    #: judge); those stand as stated, counted
    verified: bool = True

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.figures)


@dataclass(frozen=True)
class CalculationVerdict:
    ok: bool
    value: float | None  # the critic's own result
    checked: bool = True  # False: nothing to recompute (a stated figure, or inputs unknown)
    verified: bool = True  # False: the model's answer was invalid twice (could not verify)


@dataclass
class Review:
    """One claim after the critics: ``status`` ok, corrected, dropped or
    unverified (a critic's model answer was invalid twice: the claim stands
    as stated, counted)."""

    claim: Claim
    status: str = "ok"
    value: float | None = None  # the final value (None: dropped)
    decimals: int = 2
    inputs: dict[str, float] = field(default_factory=dict)  # inputs after the extraction critic
    extraction: ExtractionVerdict | None = None
    calculation: CalculationVerdict | None = None
    calls: int = 0
    fallbacks: int = 0

    @property
    def unverified(self) -> list[str]:
        """The stages that could not verify the claim (the model's answer invalid twice)."""
        return [
            n
            for n, v in (("extraction", self.extraction), ("calculation", self.calculation))
            if v is not None and not v.verified
        ]

    @property
    def extraction_failed(self) -> bool:
        return self.extraction is not None and not self.extraction.ok

    @property
    def calculation_failed(self) -> bool:
        return self.calculation is not None and self.calculation.checked and not self.calculation.ok

    def show(self) -> str:
        return "dropped" if self.value is None else format_value(self.value, self.claim.unit, self.decimals)


# -- the rules checks -------------------------------------------------------------


def _to_check(claim: Claim) -> list[tuple[str, float, int | None]]:
    """(metric, value, decimals) of the figures the extraction critic checks:
    the inputs, then the claim itself unless it is purely derived (its metric
    is not stated by the sources)."""
    facts = stated_values(claim.sources)
    out: list[tuple[str, float, int | None]] = [(m, v, None) for m, v in claim.inputs.items()]
    metric = METRICS[claim.metric]
    derivable = bool(claim.inputs) or metric.compute({m: f.value for m, f in facts.items()}) is not None
    if claim.metric in facts or not metric.derived or not derivable:
        out.append((claim.metric, claim.value, claim.decimals))
    return out


def rules_extraction(claim: Claim) -> ExtractionVerdict:
    """Each figure checked against what the cited sources state. A figure they state for its metric
    anywhere (an unlabelled one: in its unit), up to rounding, stands: a filing states several revenues (total, a segment's) and several
    growths, and the first one read as "the" revenue rewrote a segment's right $13.3bn into $35.0bn on
    real MSFT filings. One the sources never state is corrected to the metric's figure when they state
    only one value for it; with several it cannot tell which was meant: not corrected (the claim dropped)."""
    stated = [g for s in claim.sources for g in figures_in(s)]
    facts: dict[str, Any] = {}  # the first figure stated for each metric (stated_values, from one parse)
    for g in stated:
        if g.metric is not None:
            facts.setdefault(g.metric, g)
    out = []
    for metric, value, dec in _to_check(claim):
        same = [g for g in stated if (g.unit == claim.unit if metric == UNLABELLED else g.metric == metric)]
        hit = next(
            (g for g in same if close(value, g.value, g.decimals if dec is None else min(dec, g.decimals))), None
        )
        if hit is not None:
            out.append(FigureVerdict(metric, value, True, hit.value))
            continue
        values = {g.value for g in same} if metric != UNLABELLED else set()
        f = facts.get(metric)
        # wrong; corrected to the one value the sources state for the metric, or (none, or several: which
        # one the analyst meant is not known) no source value: the claim cannot stand
        out.append(FigureVerdict(metric, value, False, f.value if f is not None and len(values) == 1 else None))
    return ExtractionVerdict(tuple(out))


def _operands(claim: Claim, inputs: dict[str, float]) -> dict[str, float] | None:
    """What the derived claim is computed from: its (corrected) inputs, else
    the source's stated figures; None if it is not derived or a stated
    figure with no inputs (the extraction critic's business)."""
    metric = METRICS[claim.metric]
    if not metric.derived:
        return None
    if inputs:
        return inputs
    facts = stated_values(claim.sources)
    if claim.metric in facts:
        return None
    return {m: f.value for m, f in facts.items()}


def rules_calculation(claim: Claim, inputs: dict[str, float]) -> CalculationVerdict:
    ops = _operands(claim, inputs)
    expected = METRICS[claim.metric].compute(ops) if ops is not None else None
    if expected is None:
        return CalculationVerdict(True, None, checked=False)
    return CalculationVerdict(close(claim.value, expected, claim.decimals), expected)


# -- the questions (both brains) -----------------------------------------------------


class FigureCheck(BaseModel):
    figure: str = Field(examples=["F1"])
    ok: bool
    source_value: float | None = None


class ExtractionAnswer(BaseModel):
    checks: list[FigureCheck] = Field(min_length=1, max_length=8)

    def cited(self):
        return (c.figure for c in self.checks)


class CalculationAnswer(BaseModel):
    ok: bool
    value: float

    def cited(self):
        return iter(())


def _source_block(sources: Sequence[str]) -> str:
    return "\n".join(f"[S{n}] {' '.join(s.split())[:SOURCE_CHARS]}" for n, s in enumerate(sources, 1)) or "(none)"


def _fig_line(label: str, metric: str, value: float, unit: str = "") -> str:
    m = METRICS[metric]
    return f"{label}: {m.label} = {value:g}" + (f" ({'$bn' if unit == 'bn' else unit})" if metric == UNLABELLED else "")


def extraction_question(claim: Claim, agent: str, day: str) -> Question:
    figs = _to_check(claim)
    labels = [f"F{n}" for n in range(1, len(figs) + 1)]
    system, user = load_template(str(EXTRACTION_TEMPLATE))

    def messages():
        lines = "\n".join(_fig_line(lb, m, v, claim.unit) for lb, (m, v, _) in zip(labels, figs))
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": user.format(sources=_source_block(claim.sources), figures=lines)},
        ]

    def to_report(a: ExtractionAnswer) -> ExtractionVerdict:
        said = {c.figure: c for c in a.checks}
        out = []
        for lb, (m, v, _) in zip(labels, figs):
            c = said.get(lb)
            if c is None:  # not judged: the analyst's figure stands, unverified (it read as checked and right)
                out.append(FigureVerdict(m, v, True, None))
            else:
                out.append(FigureVerdict(m, v, c.ok, c.source_value if not c.ok else v))
        return ExtractionVerdict(tuple(out), verified=len(said.keys() & set(labels)) == len(labels))

    def not_verified() -> ExtractionVerdict:
        return ExtractionVerdict(tuple(FigureVerdict(m, v, True, v) for m, v, _ in figs), verified=False)

    return Question(
        agent=agent,
        day=day,
        messages=messages,
        model=ExtractionAnswer,
        allowed=frozenset(labels),
        to_report=to_report,
        rules=lambda: rules_extraction(claim),
        fallback=not_verified,
    )


def calculation_question(claim: Claim, inputs: dict[str, float], agent: str, day: str) -> Question | None:
    """None when there is nothing to recompute (no question is asked)."""
    ops = _operands(claim, inputs)
    metric = METRICS[claim.metric]
    if ops is None or metric.compute(ops) is None:
        return None
    system, user = load_template(str(CALCULATION_TEMPLATE))
    used = {m: ops[m] for m in metric.inputs}

    def messages():
        lines = "\n".join(_fig_line(f"F{n}", m, v) for n, (m, v) in enumerate(used.items(), 1))
        return [
            {"role": "system", "content": system},
            {
                "role": "user",
                "content": user.format(figures=lines, metric=metric.label, claimed=f"{claim.value:.{claim.decimals}f}"),
            },
        ]

    def to_report(a: CalculationAnswer) -> CalculationVerdict:
        return CalculationVerdict(a.ok, a.value)

    return Question(
        agent=agent,
        day=day,
        messages=messages,
        model=CalculationAnswer,
        allowed=frozenset(),
        to_report=to_report,
        rules=lambda: rules_calculation(claim, inputs),
        fallback=lambda: CalculationVerdict(True, None, checked=False, verified=False),
    )


# -- both, in order ---------------------------------------------------------------

STAGES = ("extraction", "calculation")


def critique(claim: Claim, brain: Any, stages: Sequence[str] = STAGES, agent: str = "critic", day: str = "") -> Review:
    """The claim through the critics in ``stages``; the final value is the
    claim's, corrected by what failed (or None: dropped)."""
    rv = Review(claim, value=claim.value, decimals=claim.decimals, inputs=dict(claim.inputs))

    def ask(q: Question) -> Any:
        ans: Answer = brain.answer(q)
        rv.calls += ans.calls
        rv.fallbacks += ans.via == "fallback"
        return ans.report

    if "extraction" in stages:
        ev: ExtractionVerdict = (
            ask(extraction_question(claim, f"{agent}-extraction", day)) if _to_check(claim) else ExtractionVerdict(())
        )
        rv.extraction = ev
        n_inputs = len(claim.inputs)
        for k, fv in enumerate(ev.figures):
            if fv.ok:
                continue
            if fv.source_value is None:  # not in the source, not derivable: cannot stand
                rv.status, rv.value = "dropped", None
                return rv
            if k < n_inputs:
                rv.inputs[fv.metric] = fv.source_value
                rv.status = "corrected"
            else:  # the claim itself is a stated figure
                facts = stated_values(claim.sources)
                dec = facts[fv.metric].decimals if fv.metric in facts else claim.decimals
                rv.value, rv.decimals, rv.status = fv.source_value, dec, "corrected"
    if "calculation" in stages:
        checked = replace(claim, value=rv.value if rv.value is not None else claim.value)
        q = calculation_question(checked, rv.inputs, f"{agent}-calculation", day)
        if q is not None:
            cv: CalculationVerdict = ask(q)
            rv.calculation = cv
            if not cv.ok and cv.value is not None:
                rv.value, rv.status = rounded(cv.value, claim.decimals), "corrected"
        else:
            rv.calculation = CalculationVerdict(True, None, checked=False)
    if rv.status == "ok" and rv.unverified:
        rv.status = "unverified"  # kept as the analyst stated it, flagged and counted
    return rv
