"""``fincon eval numeric``: the numeric critics scored as the paper scores
them (exact match of an analyst alone, with the data-extraction critic,
with both critics) on questions about the bundled synthetic filings and calls.

The set (:func:`build_set`): every 10-Q, 10-K and earnings call of the
bundled corpus, with questions that need figures taken from the document
and zero, one or two arithmetic steps ("By how much did revenue change from
the prior-year period, in $ billion?"). The generator knows the true
figures: filings carry them in their metadata; a call's are recomputed with
the generator's own function for the call's day. Gold answers are computed
from the figures *as the document prints them* (revenue to the cent of a
billion, rates to 0.1 %), so an analyst who reads right and computes right
matches exactly; each document's printed figures are checked against its
text before it enters the set.

Held out: documents are split by a hash of their id into ``dev`` (about a
quarter) and ``test``. The one worked example in the analyst's prompt comes
from ``dev``; the table is computed on ``test``, which never appears in a
prompt's examples.

Exact match: prediction and gold rounded to the question's precision (2
decimals for $ billion, 1 for %) are equal; a dropped answer is wrong.

The pipeline per question (the paper's three settings, one extraction and
one calculation review shared by the rows): the analyst answers (figures
taken + result); the extraction critic checks the figures; the calculation
critic, given the extraction verdict, recomputes; the analyst revises with
the feedback of the critics of the row (one critic: extraction only; both).
The pipeline and the rows' tally are the harness this evaluation shares with
the FinQA format (:mod:`fincon.eval.scoring`).

``--brain rules``: the analyst is a deliberately imperfect baseline so the
critics have something to fix: it takes the first figure of the right unit
in the document (wrong for operating income, capex and a filing's margin)
and uses shortcut arithmetic for prior-year figures (``r x (1 - g)`` and
``r x g`` instead of dividing by ``1 + g``). Its revision takes corrected
figures and recomputes with its own arithmetic; a calculation critic's
result it adopts. ``--brain llm``: every agent is a model call through the
normal LLM client (cached), with the rules answers as counted fallbacks.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

import pandas as pd
from pydantic import BaseModel, Field

from fincon.agents.brains import Question
from fincon.agents.critics.claims import METRICS, Claim, figures_in, metric_of_question, rounded
from fincon.agents.critics.critics import STAGES, Review, critique
from fincon.data.events.generator import DEFAULT_TICKERS, NAMES, SAMPLE_DIR, _Ctx, _figures, load_closes
from fincon.data.events.loaders.directory import DirectoryLoader
from fincon.data.events.model import MARKET_TZ
from fincon.eval import scoring
from fincon.eval.scoring import Attempt, Outcome

TEMPLATES = Path(__file__).resolve().parents[1] / "agents" / "critics"
ANALYST_TEMPLATE = TEMPLATES / "qa_analyst.txt"
REVISE_TEMPLATE = TEMPLATES / "qa_revise.txt"
#: metrics a document states (what the analyst may say it took)
STATED = ("revenue", "revenue_growth", "operating_income", "operating_margin", "cash", "capex")
DEV_SHARE = 4  # crc32(doc id) % DEV_SHARE == 0 -> dev

#: (metric, question, steps) per kind of document
FILING_QUESTIONS = (
    ("operating_margin", "What operating margin did the company report for the period, in %?", 0),
    ("capex_share", "What were capital expenditures as a percentage of revenue, in %?", 1),
    ("income_after_capex", "What was operating income minus capital expenditures, in $ billion?", 1),
    ("prior_revenue", "What was revenue in the prior-year period, in $ billion?", 1),
    ("revenue_change", "By how much did revenue change from the prior-year period, in $ billion?", 2),
)
CALL_QUESTIONS = (
    (
        "operating_income",
        "What operating income do the revenue and operating margin on the call imply, in $ billion?",
        1,
    ),
)


@dataclass(frozen=True)
class QAItem:
    id: str
    doc: str  # event id
    kind: str  # 10-Q, 10-K, earnings_call
    text: str
    metric: str
    question: str
    steps: int
    gold: float
    decimals: int
    split: str
    figures: dict[str, float] = field(default_factory=dict)  # as printed

    @property
    def unit(self) -> str:
        return METRICS[self.metric].unit

    def prompt_question(self) -> str:
        return f"{self.question} Round to {self.decimals} decimals."


def split_of(doc: str) -> str:
    return "dev" if zlib.crc32(doc.encode()) % DEV_SHARE == 0 else "test"


def _printed_filing(meta: dict) -> dict[str, float]:
    """The figures as the filing text prints them (generator's formats)."""
    return {
        "revenue": round(meta["revenue_bn"], 2),
        "revenue_growth": float(f"{meta['revenue_growth'] * 100:.1f}"),
        "operating_income": round(meta["operating_income_bn"], 2),
        "operating_margin": float(f"{meta['operating_margin'] * 100:.1f}"),
        "cash": round(meta["cash_bn"], 2),
        "capex": round(meta["capex_bn"], 2),
    }


def _call_figures(events_by_ticker: dict[str, list], tickers: Sequence[str]) -> dict[str, dict[str, float]]:
    """Call id -> the revenue and margin its script speaks, from the
    generator's own ``_figures`` on the call's day."""

    out: dict[str, dict[str, float]] = {}
    for t in tickers:
        calls = [e for e in events_by_ticker.get(t, []) if e.source == "earnings_call"]
        if not calls:
            continue
        closes = load_closes(t)
        days = pd.DatetimeIndex(closes.index)
        name, sector = NAMES.get(t, (t, "its industry"))
        c = _Ctx(t, closes, closes.pct_change().fillna(0.0), days, None, name, sector)
        for e in calls:
            day = pd.Timestamp(e.published_at.astimezone(MARKET_TZ).date())
            f = _figures(c, int(e.metadata["fiscal_year"]), int(e.metadata["fiscal_quarter"]), c.pos(day))
            out[e.id] = {
                "revenue": float(f"{f['revenue_bn']:.1f}"),
                "operating_margin": float(f"{f['operating_margin'] * 100:.0f}"),
            }
    return out


def _printed_in(text: str, figures: dict[str, float]) -> bool:
    """Every figure appears in the text under its metric (the set's self-check)."""
    seen: dict[str, list[float]] = {}
    for f in figures_in(text):
        seen.setdefault(f.metric or "", []).append(f.value)
    return all(any(abs(v - x) < 1e-9 for x in seen.get(m, [])) for m, v in figures.items())


def build_set(tickers: Sequence[str] | None = None) -> tuple[list[QAItem], dict[str, int]]:
    """The QA set from the bundled corpus, and what was skipped (self-check)."""

    tickers = list(tickers or DEFAULT_TICKERS)
    evs = DirectoryLoader(SAMPLE_DIR).load(tickers)
    by_ticker: dict[str, list] = {}
    for e in evs:
        by_ticker.setdefault(e.ticker, []).append(e)
    calls = _call_figures(by_ticker, tickers)
    items: list[QAItem] = []
    skipped = Counter()
    for e in sorted(evs, key=lambda e: e.id):
        if e.source in ("10-Q", "10-K"):
            figs, questions = _printed_filing(e.metadata), FILING_QUESTIONS
        elif e.source == "earnings_call" and e.id in calls:
            figs, questions = calls[e.id], CALL_QUESTIONS
        else:
            continue
        text = e.text or ""
        if not _printed_in(text, figs):
            skipped[e.source] += 1
            continue
        for metric, question, steps in questions:
            m = METRICS[metric]
            gold = figs[metric] if steps == 0 else m.compute(figs)
            dec = 2 if m.unit == "bn" else 1
            items.append(
                QAItem(
                    f"{e.id}:{metric}",
                    e.id,
                    e.source,
                    text,
                    metric,
                    question,
                    steps,
                    float(gold),
                    dec,
                    split_of(e.id),
                    dict(figs),
                )
            )
    return items, dict(skipped)


def exact(pred: float | None, gold: float, decimals: int) -> bool:
    if pred is None:
        return False
    return f"{rounded(pred, decimals):.{decimals}f}" == f"{rounded(gold, decimals):.{decimals}f}"


# -- the analyst ------------------------------------------------------------------


class FigureAnswer(BaseModel):
    metric: Literal[STATED]  # type: ignore[valid-type]
    value: float


class QAAnswer(BaseModel):
    figures: list[FigureAnswer] = Field(min_length=1, max_length=4)
    answer: float

    def cited(self):
        return iter(())


def _first_of_unit(text: str, unit: str) -> float | None:
    return next((f.value for f in figures_in(text) if f.unit == unit), None)


def _shortcut(metric: str, v: dict[str, float]) -> float | None:
    """The rules analyst's arithmetic: right except the prior-year shortcuts."""
    if metric == "prior_revenue" and {"revenue", "revenue_growth"} <= set(v):
        return v["revenue"] * (1 - v["revenue_growth"] / 100.0)
    if metric == "revenue_change" and {"revenue", "revenue_growth"} <= set(v):
        return v["revenue"] * v["revenue_growth"] / 100.0
    m = METRICS[metric]
    return m.compute(v) if m.derived and all(i in v for i in m.inputs) else v.get(metric)


def _needs(item: QAItem) -> tuple[str, ...]:
    m = METRICS[item.metric]
    return (item.metric,) if item.steps == 0 or not m.derived else m.inputs


def rules_answer(item: QAItem) -> Attempt:
    """The imperfect baseline: first figure of the right unit, shortcut arithmetic."""
    figs = {}
    for need in _needs(item):
        v = _first_of_unit(item.text, METRICS[need].unit)
        if v is not None:
            figs[need] = v
    val = _shortcut(item.metric, figs)
    return Attempt(figs, None if val is None else rounded(val, item.decimals))


def rules_revise(item: QAItem, a: Attempt, review: Review, stages: Sequence[str]) -> Attempt:
    figs = dict(a.figures)
    value = a.answer
    if "extraction" in stages and review.extraction is not None:
        stated_claim = None
        for fv in review.extraction.figures:
            if not fv.ok and fv.source_value is not None:
                if fv.metric in figs:
                    figs[fv.metric] = fv.source_value
                if fv.metric == item.metric:
                    stated_claim = fv.source_value
        value = _shortcut(item.metric, figs)
        if item.steps == 0 and stated_claim is not None:
            value = stated_claim
    if "calculation" in stages and review.calculation_failed and review.calculation.value is not None:
        value = review.calculation.value
    return Attempt(figs, None if value is None else rounded(value, item.decimals))


def _example_item(dev: Sequence[QAItem]) -> QAItem | None:
    """The dev question whose worked answer the analyst's prompt shows."""
    return next((i for i in dev if i.metric == "revenue_change"), None) or (dev[0] if dev else None)


def _example(ex: QAItem | None) -> dict[str, str]:
    """One worked example for the analyst's prompt, from the dev split only."""
    if ex is None:
        return {"example_document": "(none)", "example_question": "(none)", "example_answer": "(none)"}
    figs = {m: ex.figures[m] for m in _needs(ex)}
    ans = {"figures": [{"metric": m, "value": v} for m, v in figs.items()], "answer": rounded(ex.gold, ex.decimals)}
    return {
        "example_document": " ".join(ex.text.split()),
        "example_question": ex.prompt_question(),
        "example_answer": json.dumps(ans),
    }


def _attempt(a: QAAnswer) -> Attempt:
    return Attempt({f.metric: f.value for f in a.figures}, a.answer)


def analyst_question(item: QAItem, example: dict[str, str]) -> Question:
    return scoring.template_question(
        ANALYST_TEMPLATE,
        "qa-analyst",
        QAAnswer,
        _attempt,
        lambda: rules_answer(item),
        user=lambda: {"document": " ".join(item.text.split()), "question": item.prompt_question()},
        system=lambda: {"metrics": ", ".join(STATED), **example},
    )


def _feedback(item: QAItem, review: Review, stages: Sequence[str]) -> str:
    ex, cv = review.extraction, review.calculation
    figures = [] if ex is None else [(METRICS[f.metric].label, f.claimed, f.ok, f.source_value) for f in ex.figures]
    return scoring.feedback(
        figures, (cv.ok, cv.value) if cv is not None and cv.checked else None, item.decimals, stages
    )


def revise_question(item: QAItem, a: Attempt, review: Review, stages: Sequence[str]) -> Question:
    return scoring.template_question(
        REVISE_TEMPLATE,
        "qa-analyst-revise",
        QAAnswer,
        _attempt,
        lambda: rules_revise(item, a, review, stages),
        user=lambda: {
            "document": " ".join(item.text.split()),
            "question": item.prompt_question(),
            "figures": ", ".join(f"{m} = {v:g}" for m, v in a.figures.items()) or "(none)",
            "answer": "(none)" if a.answer is None else f"{a.answer:g}",
            "feedback": _feedback(item, review, stages),
        },
        system=lambda: {"metrics": ", ".join(STATED)},
    )


def as_claim(item: QAItem, a: Attempt) -> Claim:
    """The analyst's answer as a claim for the critics. Its metric is read
    from the question's words (:func:`metric_of_question`), not taken from
    the answer key, so the rules critics compute only from what an analyst
    reads: the document, the question and the textbook definitions."""
    metric = metric_of_question(item.question)
    inputs = {m: v for m, v in a.figures.items() if m != metric or item.steps == 0}
    return Claim(
        metric, a.answer if a.answer is not None else float("nan"), item.unit, item.decimals, inputs, (item.text,)
    )


# -- the evaluation ---------------------------------------------------------------


def evaluate(
    brain: Any, items: Sequence[QAItem], example: dict[str, str], progress: bool = False
) -> tuple[list[Outcome], Counter]:
    """The shared pipeline (:func:`fincon.eval.scoring.evaluate`) with this
    set's analyst (its prompt's worked example: ``example``) and the team's
    numeric critics reviewing the answer as a claim."""
    return scoring.evaluate(
        brain,
        items,
        lambda item: analyst_question(item, example),
        lambda item, a, b: critique(as_claim(item, a), b, STAGES, agent="qa-critic"),
        revise_question,
        progress,
    )


def table(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Exact match per row, by number of steps; fixed and broken: against the analyst alone."""
    base = [exact(o.answers["alone"], o.item.gold, o.item.decimals) for o in outcomes]

    def cells(key: str, label: str, s: scoring.RowScore) -> dict[str, Any]:
        return {
            "setting": label,
            "n": s.n,
            "correct": s.correct,
            "em": s.percent,
            "by_steps": s.by_group,
            "flagged": s.flagged,
            "fixed": sum(r and not b for r, b in zip(s.right, base)),
            "broken": sum(b and not r for r, b in zip(s.right, base)),
        }

    return scoring.table(outcomes, lambda pred, i: exact(pred, i.gold, i.decimals), lambda i: i.steps, (0, 1, 2), cells)


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    head = f"{'setting':<36}{'EM %':>7}{'right':>8}{'0 steps':>10}{'1 step':>10}{'2 steps':>10}{'flagged':>9}{'fixed':>7}{'broken':>8}"
    lines = [head, "-" * len(head)]
    for r in rows:
        st = [f"{a}/{b}" for a, b in (r["by_steps"][s] for s in (0, 1, 2))]
        lines.append(
            f"{r['setting']:<36}{r['em']:>7.1f}{r['correct']:>4}/{r['n']:<3}{st[0]:>10}{st[1]:>10}{st[2]:>10}"
            f"{r['flagged']:>9}{r['fixed']:>7}{r['broken']:>8}"
        )
    return "\n".join(lines)


def run(
    brain_name: str = "rules",
    limit: int | None = None,
    split: str = "test",
    client: Any = None,
    tickers: Sequence[str] | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    items, skipped = build_set(tickers)
    dev = [i for i in items if i.split == "dev"]
    shown = _example_item(dev)
    # never a question on the worked example's document: its figures and answer are in every prompt (with
    # --split dev or all its own question was scored with its gold in the system prompt)
    chosen = [i for i in items if (split == "all" or i.split == split) and (shown is None or i.doc != shown.doc)]
    if limit is not None:
        # spread over question kinds: round-robin by metric
        by_metric: dict[str, list[QAItem]] = {}
        for i in chosen:
            by_metric.setdefault(i.metric, []).append(i)
        chosen, k = [], 0
        while len(chosen) < min(limit, sum(len(v) for v in by_metric.values())):
            for v in by_metric.values():
                if k < len(v) and len(chosen) < limit:
                    chosen.append(v[k])
            k += 1
    example = _example(shown)
    outcomes, usage = evaluate(scoring.make_brain(brain_name, client), chosen, example, progress)
    return {
        "brain": brain_name,
        "split": split,
        "questions": len(chosen),
        "documents": len({i.doc for i in chosen}),
        "dev_documents": len({i.doc for i in dev}),
        "example_document_left_out": shown.doc if shown is not None else None,
        "skipped_documents": skipped,
        "example": example,
        "rows": table(outcomes),
        "usage": dict(usage),
        "outcomes": outcomes,
    }


RULES_NOTE = (
    "rules brain: the analyst is a deliberately imperfect baseline (takes the first figure of the right "
    "unit; prior-year shortcuts r*(1-g) and r*g); the critics are deterministic checks (figure looked up "
    "in the document by metric with rounding tolerance; arithmetic recomputed in Python)."
)


def report(res: dict[str, Any]) -> str:
    out = [
        f"numeric critics, brain {res['brain']}: {res['questions']} questions from {res['documents']} documents "
        f"({res['split']} split; the prompt's example comes from the {res['dev_documents']} dev documents, "
        f"and no question on its document is scored)",
        "exact match after rounding to the question's precision ($bn: 2 decimals, %: 1 decimal)",
        "",
        format_table(res["rows"]),
        "",
    ]
    out.append("flagged: answers a critic of the row found wrong (then revised); fixed/broken: vs the analyst alone")
    if res["brain"] == "rules":
        out.append(RULES_NOTE)
    else:
        out.append(scoring.usage_line(res["usage"], "an analyst's: its rules answer, counted; "))
    if res["skipped_documents"]:
        out.append(f"documents left out (printed figures did not match the generator's): {res['skipped_documents']}")
    return "\n".join(out)
