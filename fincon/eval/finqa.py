"""``fincon eval numeric --format finqa --data FILE.json``: the numeric
critics scored on FinQA's published format (Chen et al., EMNLP 2021).

Each entry: ``pre_text`` (sentences), ``table`` (rows of cells),
``post_text``, ``qa.question``, ``qa.exe_ans`` (the gold result) and
``qa.program`` (the gold program: ``subtract(5829, 5735), divide(#0, 5735)``).
The document a model reads is pre_text + the table (cells joined by ``|``)
+ post_text; the **gold program and answer are used only for scoring**
(the number of steps and the kind of the last operation give the question
type) and never reach a prompt (:mod:`fincon.eval.leaks` checks the cache).

The pipeline is the one of ``fincon eval numeric`` (after Fatemi & Hu):
the analyst answers (figures taken + result); the data-extraction critic
checks the figures against the document; the calculation critic, given the
checked figures and the question, recomputes; the analyst revises with the
feedback of the row's critics. A critic answer invalid twice is "could not
verify" (counted), never an answer from the key. Both evaluations run on one
harness (:mod:`fincon.eval.scoring`); this module keeps FinQA's items,
prompts, critics and scoring.

Scoring: FinQA's execution accuracy (prediction and ``exe_ans`` equal when
rounded to 5 decimals, as FinQA's evaluation script compares them), and a
lenient column (relative error at most 1 %, or the same value read as a
percentage), per question type: 1, 2 and 3+ program steps.

``--brain rules``: there is no rules analyst for free-form FinQA questions
(deriving the computation from the question is the task itself), so it
abstains (no answer: wrong); the rules extraction critic checks that each
figure is printed in the document; the rules calculation critic has nothing
to recompute from without the key and checks nothing. The rules rows are
therefore 0 % by construction; the format exists for the model
(``--brain llm``), whose rows the lead records.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from pydantic import BaseModel, Field

from fincon.agents.brains import Question
from fincon.agents.critics.critics import CALCULATION_TEMPLATE, EXTRACTION_TEMPLATE, CalculationAnswer, ExtractionAnswer
from fincon.errors import DataError
from fincon.eval import scoring
from fincon.eval.scoring import Attempt, Outcome

TEMPLATES = Path(__file__).resolve().parents[1] / "agents" / "critics"
ANALYST_TEMPLATE = TEMPLATES / "finqa_analyst.txt"
REVISE_TEMPLATE = TEMPLATES / "finqa_revise.txt"
TYPES = ("1 step", "2 steps", "3+ steps")
DOWNLOAD = "https://github.com/czyssrs/FinQA (dataset/train.json, dev.json, test.json)"


@dataclass(frozen=True)
class FinQAItem:
    id: str
    text: str
    question: str
    gold: float  # qa.exe_ans: scoring only
    program: str  # qa.program: scoring only (question type), never in a prompt
    steps: int

    @property
    def kind(self) -> str:
        return TYPES[min(self.steps, 3) - 1] if self.steps else TYPES[0]


def document(entry: dict[str, Any]) -> str:
    pre = " ".join(entry.get("pre_text") or [])
    table = "\n".join(" | ".join(str(c) for c in row) for row in entry.get("table") or [])
    post = " ".join(entry.get("post_text") or [])
    return f"{pre}\n{table}\n{post}".strip()


def program_steps(program: str) -> int:
    return len(re.findall(r"[a-z_]+\(", program or ""))


def _shape_problem(e: Any) -> str | None:
    """What about an entry's shape would break reading it, or None."""
    if not isinstance(e, dict):
        return f"a {type(e).__name__}, not an object"
    if e.get("qa") is not None and not isinstance(e["qa"], dict):
        return f"qa is a {type(e['qa']).__name__}"
    table = e.get("table")
    if table is not None and not (isinstance(table, list) and all(isinstance(r, list) for r in table)):
        return "table is not a list of rows"
    for key in ("pre_text", "post_text"):
        text = e.get(key)
        if text is not None and not (isinstance(text, list) and all(isinstance(x, str) for x in text)):
            return f"{key} is not a list of sentences"
    return None


def load(path: str | Path) -> list[FinQAItem]:
    """FinQA's JSON (a list of entries); entries without a numeric exe_ans are
    skipped (:func:`load_counted` counts them); a file that is not FinQA's
    JSON, or holds no usable entry, is a one-line :class:`DataError`."""
    return load_counted(path)[0]


def load_counted(path: str | Path) -> tuple[list[FinQAItem], int]:
    """:func:`load`, and how many entries it left out: a yes/no answer (FinQA's ``greater``), which
    FinQA's own evaluation counts in its denominator."""

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path} is not JSON text ({type(exc).__name__}); give FinQA's dataset/test.json") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: FinQA's JSON is a list of entries, this is a {type(data).__name__}")
    out, left = [], 0
    for n, e in enumerate(data, 1):
        why = _shape_problem(e)
        if why:
            raise DataError(
                f"{path}: entry {n}: {why}; FinQA's entries hold qa (an object), table (rows) and texts (lists)"
            )
        qa = e.get("qa") or {}
        gold = qa.get("exe_ans")
        if isinstance(gold, bool) or not isinstance(gold, (int, float)):
            left += 1
            continue
        program = str(qa.get("program", ""))
        out.append(
            FinQAItem(
                str(e.get("id", len(out))),
                document(e),
                str(qa.get("question", "")),
                float(gold),
                program,
                program_steps(program),
            )
        )
    if not out:
        raise DataError(
            f"{path}: no entry with a qa.question and a numeric qa.exe_ans ({len(data)} entries read); "
            "is this FinQA's JSON?"
        )
    return out, left


def correct(pred: float | None, gold: float) -> bool:
    """FinQA's execution accuracy: equal after rounding both to 5 decimals."""
    return pred is not None and round(pred, 5) == round(gold, 5)


def close(pred: float | None, gold: float) -> bool:
    """Lenient: within 1 % relative (or 1e-4 absolute), or the same value as a percentage or as a fraction
    (0.01639 for a gold of 1.63902 %: the prompt asks for a percentage as a fraction)."""
    if pred is None:
        return False
    for p in (pred, pred / 100.0, pred * 100.0):  # a percentage as a fraction too (the prompt asks for one)
        if abs(p - gold) <= max(1e-4, 0.01 * abs(gold)):
            return True
    return False


# -- the analyst ---------------------------------------------------------------------


class NamedFigure(BaseModel):
    name: str = Field(min_length=1, max_length=60)
    value: float


class FinQAAnswer(BaseModel):
    figures: list[NamedFigure] = Field(min_length=1, max_length=6)
    answer: float

    def cited(self):
        return iter(())


def _attempt(a: FinQAAnswer) -> Attempt:
    return Attempt({f.name: f.value for f in a.figures}, a.answer)


def analyst_question(item: FinQAItem) -> Question:
    return scoring.template_question(
        ANALYST_TEMPLATE,
        "finqa-analyst",
        FinQAAnswer,
        _attempt,
        lambda: Attempt({}, None),
        user=lambda: {"document": item.text, "question": item.question},
    )


# -- the critics (generic figures) -------------------------------------------------------

_NUM = re.compile(r"\(?-?\$?\s?\d[\d,]*(?:\.\d+)?\)?")


def printed_numbers(text: str) -> list[float]:
    out = []
    for m in _NUM.finditer(text):
        s = m.group(0)
        neg = s.startswith("(") and s.endswith(")") or "-" in s
        try:
            v = float(re.sub(r"[^\d.]", "", s))
        except ValueError:
            continue
        out.append(-v if neg else v)
    return out


@dataclass
class Review:
    figures: list[tuple[str, float, bool, float | None]] = field(default_factory=list)  # name, claimed, ok, source
    calculation: tuple[bool, float | None] | None = None  # (ok, the critic's own result); None: not checked
    unverified: list[str] = field(default_factory=list)
    calls: int = 0
    fallbacks: int = 0

    @property
    def extraction_failed(self) -> bool:
        return any(not ok for _, _, ok, _ in self.figures)

    @property
    def calculation_failed(self) -> bool:
        return self.calculation is not None and not self.calculation[0]


def rules_extraction(item: FinQAItem, figures: dict[str, float]) -> list[tuple[str, float, bool, float | None]]:
    """Each figure must be printed in the document (up to its own rounding);
    the rules critic cannot tell which printed number was meant instead."""
    nums = printed_numbers(item.text)
    out = []
    for name, v in figures.items():
        dec = len(f"{v}".split(".")[1].rstrip("0")) if "." in f"{v}" else 0
        ok = any(abs(abs(n) - abs(v)) <= 0.5 * 10**-dec + 1e-9 for n in nums)
        out.append((name, v, ok, v if ok else None))
    return out


def extraction_question(item: FinQAItem, a: Attempt) -> Question:
    names = list(a.figures)
    labels = [f"F{n}" for n in range(1, len(names) + 1)]
    lines = "\n".join(f"{lb}: {nm} = {a.figures[nm]:g}" for lb, nm in zip(labels, names))

    def to_report(ans: ExtractionAnswer):
        said = {c.figure: c for c in ans.checks}
        return [
            (
                nm,
                a.figures[nm],
                said[lb].ok if lb in said else True,  # not judged: stands, unverified (no source value)
                (said[lb].source_value if not said[lb].ok else a.figures[nm]) if lb in said else None,
            )
            for lb, nm in zip(labels, names)
        ]

    return scoring.template_question(
        EXTRACTION_TEMPLATE,
        "finqa-critic-extraction",
        ExtractionAnswer,
        to_report,
        lambda: rules_extraction(item, a.figures),
        user=lambda: {"sources": f"[S1] {item.text}", "figures": lines},
        allowed=frozenset(labels),
        fallback=lambda: "unverified",
    )


def calculation_question(item: FinQAItem, figures: dict[str, float], answer: float) -> Question:
    lines = "\n".join(f"F{n}: {nm} = {v:g}" for n, (nm, v) in enumerate(figures.items(), 1))
    return scoring.template_question(
        CALCULATION_TEMPLATE,
        "finqa-critic-calculation",
        CalculationAnswer,
        lambda c: (c.ok, c.value),
        lambda: None,
        user=lambda: {"figures": lines, "metric": f"the answer to: {item.question}", "claimed": f"{answer:.5f}"},
        fallback=lambda: "unverified",
    )


def critique(item: FinQAItem, a: Attempt, brain: Any) -> Review:
    rv = Review()

    def ask(q: Question):
        ans = brain.answer(q)
        rv.calls += ans.calls
        rv.fallbacks += ans.via == "fallback"
        return ans.report

    got = ask(extraction_question(item, a)) if a.figures else []
    figures = dict(a.figures)
    if got == "unverified":
        rv.unverified.append("extraction")
    else:
        rv.figures = list(got)
        for name, _, ok, src in rv.figures:
            if not ok and src is not None:
                figures[name] = src
        if any(ok and src is None for _, _, ok, src in rv.figures):  # a figure the model did not judge
            rv.unverified.append("extraction")
    if a.answer is not None and figures:
        c = ask(calculation_question(item, figures, a.answer))
        if c == "unverified":
            rv.unverified.append("calculation")
        else:
            rv.calculation = c
    return rv


def _feedback(rv: Review, stages: Sequence[str]) -> str:
    return scoring.feedback(rv.figures, rv.calculation, 5, stages)


def revise_question(item: FinQAItem, a: Attempt, rv: Review, stages: Sequence[str]) -> Question:
    def rules():
        value = a.answer
        if "calculation" in stages and rv.calculation_failed and rv.calculation[1] is not None:
            value = rv.calculation[1]
        return Attempt(dict(a.figures), value)

    return scoring.template_question(
        REVISE_TEMPLATE,
        "finqa-analyst-revise",
        FinQAAnswer,
        _attempt,
        rules,
        user=lambda: {
            "document": item.text,
            "question": item.question,
            "figures": ", ".join(f"{k} = {v:g}" for k, v in a.figures.items()) or "(none)",
            "answer": "(none)" if a.answer is None else f"{a.answer:.5f}",
            "feedback": _feedback(rv, stages),
        },
    )


# -- the evaluation ---------------------------------------------------------------------


def evaluate(brain: Any, items: Sequence[FinQAItem], progress: bool = False) -> tuple[list[Outcome], Counter]:
    """The shared pipeline (:func:`fincon.eval.scoring.evaluate`) with FinQA's
    analyst and this module's generic-figure critics."""
    return scoring.evaluate(brain, items, analyst_question, critique, revise_question, progress)


def table(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Execution accuracy per row and question type, beside the lenient ±1 % count."""

    def cells(key: str, label: str, s: scoring.RowScore) -> dict[str, Any]:
        return {
            "setting": label,
            "n": s.n,
            "correct": s.correct,
            "close": sum(close(o.answers[key], o.item.gold) for o in outcomes),
            "exec_acc": s.percent,
            "by_type": s.by_group,
            "flagged": s.flagged,
        }

    return scoring.table(outcomes, lambda pred, i: correct(pred, i.gold), lambda i: i.kind, TYPES, cells)


def run(
    path: str | Path, brain_name: str = "rules", limit: int | None = None, client: Any = None, progress: bool = False
) -> dict[str, Any]:
    items, left = load_counted(path)
    items = items[:limit] if limit else items
    outcomes, usage = evaluate(scoring.make_brain(brain_name, client), items, progress)
    return {
        "format": "finqa",
        "data": str(path),
        "brain": brain_name,
        "questions": len(items),
        "left_out": left,  # entries with a yes/no answer, which FinQA's own evaluation scores
        "rows": table(outcomes),
        "usage": dict(usage),
        "outcomes": outcomes,
    }


def report(res: dict[str, Any]) -> str:
    head = (
        f"{'setting':<36}{'exec acc %':>11}{'right':>8}{'±1%':>6}"
        + "".join(f"{t:>10}" for t in TYPES)
        + f"{'flagged':>9}"
    )
    lines = [
        f"numeric critics on FinQA ({res['data']}), brain {res['brain']}: {res['questions']} questions; "
        "execution accuracy as FinQA scores it (equal at 5 decimals); ±1%: within 1 % relative"
        + (
            f"; {res['left_out']} entries with a yes/no answer left out (FinQA's own evaluation counts them: "
            "its accuracy and this one have different denominators)"
            if res.get("left_out")
            else ""
        ),
        "",
        head,
        "-" * len(head),
    ]
    for r in res["rows"]:
        lines.append(
            f"{r['setting']:<36}{r['exec_acc']:>11.1f}{r['correct']:>4}/{r['n']:<3}{r['close']:>6}"
            + "".join(f"{f'{a}/{b}':>10}" for a, b in (r["by_type"][t] for t in TYPES))
            + f"{r['flagged']:>9}"
        )
    if res["brain"] == "rules":
        lines.append(
            "rules brain: no rules analyst exists for free-form questions (it abstains); 0 % by "
            "construction. Use --brain llm."
        )
    else:
        lines.append(scoring.usage_line(res["usage"]))
    return "\n".join(lines)
