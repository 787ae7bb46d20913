"""``fincon eval numeric --format finqa``: FinQA's published JSON read,
scored with FinQA's execution accuracy per question type, with and without
the critics; no prompt carries the gold answer or program (issue 21, items
1 and 2). Fixtures: a dozen entries of our own in FinQA's format; the model
is a scripted stub (never a live model)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fincon.cli.main import main
from fincon.eval import finqa
from fincon.eval.leaks import Key, cached_prompts, scan
from fincon.llm import CallCache, LLMClient, UsageLedger
from fincon.llm.types import Completion

DATA = Path(__file__).parent / "fixtures" / "finqa_small.json"


class FinQAStub:
    """Analyst: one figure (the first number of the table) and ``answer``;
    extraction critic: every figure ok (or invalid JSON); calculation
    critic: wrong, its own result ``calc``; revision: adopts the critic's result."""

    name = "stub"
    model_id = "stub-finqa"
    price_model = "stub-finqa"

    def __init__(self, answer=111.0, calc=16.0, extraction_ok=True):
        self.answer, self.calc, self.extraction_ok = answer, calc, extraction_ok
        self.calls = 0

    def complete(self, messages, schema, params):
        self.calls += 1
        user = messages[-1].content
        props = schema.get("properties", {})
        if "checks" in props:
            if self.extraction_ok is None:
                return Completion("not json", prompt_tokens=10, completion_tokens=2)
            ans = {
                "checks": [
                    {"figure": lb, "ok": self.extraction_ok, "source_value": None}
                    for lb in re.findall(r"^(F\d+):", user, re.M)
                ]
            }
        elif "ok" in props:
            ans = {"ok": False, "value": self.calc}
        else:
            m = re.search(r"critic's own result is ([-\d.]+)", user)
            ans = {
                "figures": [{"name": "first figure", "value": 1.0}],
                "answer": float(m.group(1)) if m else self.answer,
            }
        return Completion(json.dumps(ans), prompt_tokens=50, completion_tokens=10)

    def close(self):
        pass


def test_finqa_json_is_read_with_the_key_kept_for_scoring_only():
    items = finqa.load(DATA)
    assert len(items) == 12 and [i.kind for i in items].count("1 step") == 6
    i = items[0]
    assert i.gold == pytest.approx(0.01639) and i.steps == 2 and "net revenue | $ 5,829 | $ 5,735" in i.text
    assert "subtract" not in i.text and "0.01639" not in i.text
    assert finqa.correct(0.016390, 0.01639) and not finqa.correct(0.0164, 0.01639)  # FinQA: 5 decimals
    assert finqa.close(1.64, 0.01639) and finqa.close(0.0164, 0.01639) and not finqa.close(0.017, 0.01639)
    # found in review: a gold stated in percent (multiply(#1, const_100): 1.63902) and an answer that follows
    # the prompt's "a percentage as a fraction" (0.01639) was wrong in both columns
    assert finqa.close(0.01639, 1.63902) and not finqa.close(0.017, 1.63902)


def test_entries_with_a_yes_no_answer_are_counted_and_said(tmp_path):
    """Found in review: FinQA's greater() answers "yes"/"no" and its own evaluation counts those entries;
    they were dropped from the denominator with "as FinQA scores it" said of the rest."""
    import json

    data = json.loads(DATA.read_text())
    data += [{**data[0], "id": f"yn-{k}", "qa": {**data[0]["qa"], "exe_ans": "yes"}} for k in range(6)]
    path = tmp_path / "yn.json"
    path.write_text(json.dumps(data))
    assert finqa.load_counted(path)[1] == 6
    res = finqa.run(path, "rules")
    assert res["questions"] == 12 and res["left_out"] == 6
    assert "6 entries with a yes/no answer left out" in finqa.report(res)


def test_critic_rows_per_question_type_on_a_stub():
    # the analyst says 110 everywhere (right for the 1-step difference question only); the calculation
    # critic says 15 everywhere (right for the 1-step ratio question); the revision adopts it
    stub = FinQAStub(answer=110.0, calc=15.0)
    res = finqa.run(DATA, "llm", client=LLMClient(stub, ledger=UsageLedger()))
    rows = {r["setting"]: r for r in res["rows"]}
    alone, one, both = rows.values()
    assert alone["correct"] == 1 and alone["by_type"]["1 step"] == (1, 6)
    assert one["correct"] == 1 and one["flagged"] == 0  # a lenient extraction critic flags nothing
    assert both["correct"] == 1 and both["flagged"] == 12 and both["by_type"]["1 step"] == (1, 6)
    assert res["outcomes"][11].answers["both"] == 15.0 and res["outcomes"][1].answers["both"] == 15.0
    assert res["usage"]["fallbacks"] == 0 and res["usage"]["calls"] == 12 * 4
    out = finqa.report(res)
    assert "execution accuracy as FinQA scores it" in out and "3+ steps" in out


def test_a_failed_critic_is_could_not_verify_and_no_prompt_carries_the_key(tmp_path):
    cache = tmp_path / "finqa.sqlite"
    stub = FinQAStub(answer=111.0, calc=16.0, extraction_ok=None)
    res = finqa.run(DATA, "llm", client=LLMClient(stub, cache=CallCache(cache, "read-write"), ledger=UsageLedger()))
    assert res["usage"]["unverified"] == 12 and res["usage"]["fallbacks"] == 12
    rows = {r["setting"]: r for r in res["rows"]}
    assert rows["+ extraction critic"]["flagged"] == 0  # unverified is not a correction from the key
    prompts = cached_prompts(cache)
    assert len(prompts) == stub.calls
    keys = [Key(o.item.id, o.item.gold, 5, o.item.program, readable=(o.item.text,)) for o in res["outcomes"]]
    keys += [Key(o.item.id + ":2", o.item.gold, 2, readable=(o.item.text,)) for o in res["outcomes"]]
    assert scan(prompts, keys) == []


def test_the_cli_reads_finqa_and_says_where_to_get_it(capsys):
    assert main(["eval", "numeric", "--format", "finqa", "--data", str(DATA)]) == 0
    assert "12 questions" in capsys.readouterr().out
    assert main(["eval", "numeric", "--format", "finqa"]) == 2
    assert "github.com/czyssrs/FinQA" in capsys.readouterr().err


def test_a_figure_the_model_did_not_judge_is_unverified():
    """Found in review (the team critic's sibling): the FinQA extraction critic recorded a figure its
    model's answer left out as checked and right, its source value the analyst's own."""
    from fincon.agents.critics.critics import ExtractionAnswer, FigureCheck

    item = finqa.load(DATA)[0]
    attempt = finqa.Attempt({"revenue": 120.5, "costs": 99.9}, 20.6)
    q = finqa.extraction_question(item, attempt)
    got = q.to_report(ExtractionAnswer(checks=[FigureCheck(figure="F1", ok=True)]))
    assert got == [("revenue", 120.5, True, 120.5), ("costs", 99.9, True, None)]

    class Said:
        def answer(self, q):
            from fincon.agents.brains import Answer

            return Answer(q.to_report(ExtractionAnswer(checks=[FigureCheck(figure="F1", ok=True)])), "llm", 1)

    rv = finqa.critique(item, finqa.Attempt({"revenue": 120.5, "costs": 99.9}, None), Said())
    assert rv.unverified == ["extraction"]
