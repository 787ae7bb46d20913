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
verify" (counted), never an answer from the key.

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

from fincon.agents.brains import Question, RulesBrain
from fincon.agents.critics.critics import CALCULATION_TEMPLATE, EXTRACTION_TEMPLATE, CalculationAnswer, ExtractionAnswer
from fincon.agents.roles.base import load_template
from fincon.eval.numeric import Attempt  # the analyst's answer, the same in both evaluations

TEMPLATES = Path(__file__).resolve().parents[1] / "agents" / "critics"
ANALYST_TEMPLATE = TEMPLATES / "finqa_analyst.txt"
REVISE_TEMPLATE = TEMPLATES / "finqa_revise.txt"
ROWS = (
    ("alone", "analyst alone"),
    ("extraction", "+ extraction critic"),
    ("both", "+ extraction + calculation critics"),
)
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
    skipped; a file that is not FinQA's JSON, or holds no usable entry, is a
    one-line :class:`DataError`."""
    from fincon.errors import DataError

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path} is not JSON text ({type(exc).__name__}); give FinQA's dataset/test.json") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: FinQA's JSON is a list of entries, this is a {type(data).__name__}")
    out = []
    for n, e in enumerate(data, 1):
        why = _shape_problem(e)
        if why:
            raise DataError(
                f"{path}: entry {n}: {why}; FinQA's entries hold qa (an object), table (rows) and texts (lists)"
            )
        qa = e.get("qa") or {}
        gold = qa.get("exe_ans")
        if isinstance(gold, bool) or not isinstance(gold, (int, float)):
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
    return out


def correct(pred: float | None, gold: float) -> bool:
    """FinQA's execution accuracy: equal after rounding both to 5 decimals."""
    return pred is not None and round(pred, 5) == round(gold, 5)


def close(pred: float | None, gold: float) -> bool:
    """Lenient: within 1 % relative (or 1e-4 absolute), or the same value as a percentage."""
    if pred is None:
        return False
    for p in (pred, pred / 100.0):
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
    system, user = load_template(str(ANALYST_TEMPLATE))
    return Question(
        agent="finqa-analyst",
        day="",
        model=FinQAAnswer,
        allowed=frozenset(),
        to_report=_attempt,
        messages=lambda: [
            {"role": "system", "content": system},
            {"role": "user", "content": user.format(document=item.text, question=item.question)},
        ],
        rules=lambda: Attempt({}, None),
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
    system, user = load_template(str(EXTRACTION_TEMPLATE))
    names = list(a.figures)
    labels = [f"F{n}" for n in range(1, len(names) + 1)]
    lines = "\n".join(f"{lb}: {nm} = {a.figures[nm]:g}" for lb, nm in zip(labels, names))

    def to_report(ans: ExtractionAnswer):
        said = {c.figure: c for c in ans.checks}
        return [
            (
                nm,
                a.figures[nm],
                said[lb].ok if lb in said else True,
                (said[lb].source_value if lb in said and not said[lb].ok else a.figures[nm]),
            )
            for lb, nm in zip(labels, names)
        ]

    return Question(
        agent="finqa-critic-extraction",
        day="",
        model=ExtractionAnswer,
        allowed=frozenset(labels),
        messages=lambda: [
            {"role": "system", "content": system},
            {"role": "user", "content": user.format(sources=f"[S1] {item.text}", figures=lines)},
        ],
        to_report=to_report,
        rules=lambda: rules_extraction(item, a.figures),
        fallback=lambda: "unverified",
    )


def calculation_question(item: FinQAItem, figures: dict[str, float], answer: float) -> Question:
    system, user = load_template(str(CALCULATION_TEMPLATE))
    lines = "\n".join(f"F{n}: {nm} = {v:g}" for n, (nm, v) in enumerate(figures.items(), 1))
    return Question(
        agent="finqa-critic-calculation",
        day="",
        model=CalculationAnswer,
        allowed=frozenset(),
        messages=lambda: [
            {"role": "system", "content": system},
            {
                "role": "user",
                "content": user.format(
                    figures=lines, metric=f"the answer to: {item.question}", claimed=f"{answer:.5f}"
                ),
            },
        ],
        to_report=lambda c: (c.ok, c.value),
        rules=lambda: None,
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
    if a.answer is not None and figures:
        c = ask(calculation_question(item, figures, a.answer))
        if c == "unverified":
            rv.unverified.append("calculation")
        else:
            rv.calculation = c
    return rv


def _feedback(rv: Review, stages: Sequence[str]) -> str:
    lines = []
    if "extraction" in stages:
        for name, v, ok, src in rv.figures:
            lines.append(
                f"- extraction: {name} = {v:g} "
                + (
                    "is right"
                    if ok
                    else "is not in the document"
                    if src is None
                    else f"is wrong; the document says {src:g}"
                )
            )
    if "calculation" in stages and rv.calculation is not None:
        ok, val = rv.calculation
        lines.append("- calculation: right" if ok else f"- calculation: wrong; the critic's own result is {val:.5f}")
    return "\n".join(lines) or "- no problems found"


def revise_question(item: FinQAItem, a: Attempt, rv: Review, stages: Sequence[str]) -> Question:
    system, user = load_template(str(REVISE_TEMPLATE))

    def rules():
        value = a.answer
        if "calculation" in stages and rv.calculation_failed and rv.calculation[1] is not None:
            value = rv.calculation[1]
        return Attempt(dict(a.figures), value)

    return Question(
        agent="finqa-analyst-revise",
        day="",
        model=FinQAAnswer,
        allowed=frozenset(),
        to_report=_attempt,
        messages=lambda: [
            {"role": "system", "content": system},
            {
                "role": "user",
                "content": user.format(
                    document=item.text,
                    question=item.question,
                    figures=", ".join(f"{k} = {v:g}" for k, v in a.figures.items()) or "(none)",
                    answer="(none)" if a.answer is None else f"{a.answer:.5f}",
                    feedback=_feedback(rv, stages),
                ),
            },
        ],
        rules=rules,
    )


# -- the evaluation ---------------------------------------------------------------------


@dataclass
class Outcome:
    item: FinQAItem
    answers: dict[str, float | None]
    flagged: dict[str, bool]


def evaluate(brain: Any, items: Sequence[FinQAItem]) -> tuple[list[Outcome], Counter]:
    usage: Counter = Counter()
    out = []

    def ask(q: Question):
        ans = brain.answer(q)
        usage["calls"] += ans.calls
        usage["fallbacks"] += ans.via == "fallback"
        return ans.report

    for item in items:
        a0: Attempt = ask(analyst_question(item))
        answers: dict[str, float | None] = {"alone": a0.answer}
        flagged = {"alone": False, "extraction": False, "both": False}
        if a0.answer is None:
            out.append(Outcome(item, {**answers, "extraction": None, "both": None}, flagged))
            continue
        rv = critique(item, a0, brain)
        usage["calls"] += rv.calls
        usage["fallbacks"] += rv.fallbacks
        usage["unverified"] += bool(rv.unverified)
        for row, stages in (("extraction", ("extraction",)), ("both", ("extraction", "calculation"))):
            bad = rv.extraction_failed or (row == "both" and rv.calculation_failed)
            flagged[row] = bad
            answers[row] = ask(revise_question(item, a0, rv, stages)).answer if bad else a0.answer
        out.append(Outcome(item, answers, flagged))
    return out, usage


def table(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    rows = []
    for key, label in ROWS:
        right = [correct(o.answers[key], o.item.gold) for o in outcomes]
        near = [close(o.answers[key], o.item.gold) for o in outcomes]
        by_type = {
            t: (sum(r for r, o in zip(right, outcomes) if o.item.kind == t), sum(o.item.kind == t for o in outcomes))
            for t in TYPES
        }
        rows.append(
            {
                "setting": label,
                "n": len(outcomes),
                "correct": sum(right),
                "close": sum(near),
                "exec_acc": round(100.0 * sum(right) / len(outcomes), 1) if outcomes else 0.0,
                "by_type": by_type,
                "flagged": sum(o.flagged[key] for o in outcomes),
            }
        )
    return rows


def run(path: str | Path, brain_name: str = "rules", limit: int | None = None, client: Any = None) -> dict[str, Any]:
    items = load(path)[:limit] if limit else load(path)
    if brain_name == "llm":
        from fincon.agents.brains import LLMBrain

        brain: Any = LLMBrain(client)
    else:
        brain = RulesBrain()
    outcomes, usage = evaluate(brain, items)
    return {
        "format": "finqa",
        "data": str(path),
        "brain": brain_name,
        "questions": len(items),
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
        "execution accuracy as FinQA scores it (equal at 5 decimals); ±1%: within 1 % relative",
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
    u = res["usage"]
    if res["brain"] == "rules":
        lines.append(
            "rules brain: no rules analyst exists for free-form questions (it abstains); 0 % by "
            "construction. Use --brain llm."
        )
    else:
        lines.append(
            f"model calls {u.get('calls', 0)}, invalid answers {u.get('fallbacks', 0)} (a critic's: could "
            f"not verify, {u.get('unverified', 0)} answers)"
        )
    return "\n".join(lines)
