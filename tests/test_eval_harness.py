"""The shared harnesses of the evaluations (issue 30, item 5): the numeric
critics' pipeline and tally (fincon.eval.scoring, used by ``eval numeric``
and its FinQA format) and the debate's scoring (fincon.eval.debate_harness,
used by ``eval debate`` on calls and on filings), on hand-made items whose
rows are counted by hand. The evaluations' own tests check that their
outputs did not change."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pandas as pd
import pytest

from fincon.agents.brains import Answer
from fincon.eval import debate_harness, scoring
from fincon.eval.scoring import Attempt


class Scripted:
    """A brain that answers each question by its agent name; ``fallback``
    names the agents whose answer is an invalid model answer (counted)."""

    def __init__(self, answers, fallback=()):
        self.answers, self.fallback, self.asked = answers, set(fallback), []

    def answer(self, q):
        self.asked.append(q.agent)
        return Answer(self.answers[q.agent](q), "fallback" if q.agent in self.fallback else "llm", calls=1)


@dataclass
class Review:
    extraction_failed: bool
    calculation_failed: bool
    calls: int = 2
    fallbacks: int = 0
    unverified: list = field(default_factory=list)


def _q(agent, item):
    return SimpleNamespace(agent=agent, item=item)


def test_the_pipeline_revises_only_the_rows_whose_critics_found_a_fault():
    items = ["abstains", "right", "bad figure", "bad arithmetic"]
    reviews = {
        "right": Review(False, False),
        "bad figure": Review(True, False),
        "bad arithmetic": Review(False, True, fallbacks=1, unverified=["extraction"]),
    }
    brain = Scripted(
        {
            "analyst": lambda q: Attempt({}, None) if q.item == "abstains" else Attempt({"x": 1.0}, 1.0),
            "revise": lambda q: Attempt({"x": 2.0}, 2.0),
        },
        fallback={"analyst"},
    )
    reviewed = []

    def critique(item, a, b):
        reviewed.append(item)
        return reviews[item]

    out, usage = scoring.evaluate(
        brain, items, lambda i: _q("analyst", i), critique, lambda i, a, rv, stages: _q("revise", i)
    )
    assert reviewed == ["right", "bad figure", "bad arithmetic"]  # no answer, nothing to review
    got = {o.item: (o.answers, o.flagged) for o in out}
    assert got["abstains"] == (
        {"alone": None, "extraction": None, "both": None},
        {"alone": False, "extraction": False, "both": False},
    )
    assert got["right"][0] == {"alone": 1.0, "extraction": 1.0, "both": 1.0}
    assert got["bad figure"][0] == {"alone": 1.0, "extraction": 2.0, "both": 2.0}
    assert got["bad arithmetic"] == (
        {"alone": 1.0, "extraction": 1.0, "both": 2.0},
        {"alone": False, "extraction": False, "both": True},
    )
    # 4 analyst answers (all invalid: fallbacks) + 3 revisions + 3 reviews of 2 calls, one of them invalid
    assert brain.asked.count("revise") == 3
    assert dict(usage) == {"calls": 4 + 3 + 6, "fallbacks": 4 + 1, "unverified": 1}


def test_a_row_tallies_right_answers_by_group():
    out = [
        scoring.Outcome(SimpleNamespace(gold=1.0, group=g), {"alone": a, "extraction": a, "both": 1.0}, f)
        for g, a, f in (
            ("a", 1.0, {"alone": False, "extraction": False, "both": False}),
            ("a", 3.0, {"alone": False, "extraction": False, "both": True}),
            ("b", None, {"alone": False, "extraction": False, "both": False}),
        )
    ]
    rows = scoring.table(
        out,
        lambda pred, i: pred == i.gold,
        lambda i: i.group,
        ("a", "b", "c"),
        lambda key, label, s: {"label": label, "n": s.n, "correct": s.correct, "pct": s.percent, **s.by_group},
    )
    assert [r["label"] for r in rows] == ["analyst alone", "+ extraction critic", "+ extraction + calculation critics"]
    assert rows[0] == {
        "label": "analyst alone",
        "n": 3,
        "correct": 1,
        "pct": 33.3,
        "a": (1, 2),
        "b": (0, 1),
        "c": (0, 0),
    }
    assert rows[2]["correct"] == 3 and rows[2]["pct"] == 100.0 and rows[2]["b"] == (1, 1)
    assert scoring.table([], lambda p, i: True, lambda i: 0, (0,), lambda k, lb, s: {"pct": s.percent})[0] == {
        "pct": 0.0
    }


def test_the_feedback_names_each_critics_verdict():
    figures = [("revenue", 4.5, False, 4.32), ("cash", 1.0, True, 1.0), ("capex", 2.0, False, None)]
    both = scoring.feedback(figures, (False, 0.123456), 2, ("extraction", "calculation"))
    assert both.splitlines() == [
        "- extraction: revenue = 4.5 is wrong; the document says 4.32",
        "- extraction: cash = 1 is right",
        "- extraction: capex = 2 is not in the document",
        "- calculation: wrong; the critic's own result is 0.12",
    ]
    assert scoring.feedback(figures, (True, None), 5, ("calculation",)) == "- calculation: right"
    assert scoring.feedback([], None, 5, ("extraction", "calculation")) == "- no problems found"


def _call(direction, horizon, returns):
    return SimpleNamespace(direction=direction, horizon=horizon, returns=returns)


def test_the_debate_scores_directional_calls_at_each_horizon_and_their_own():
    closes = pd.Series([100.0, 110.0, 99.0, 121.0])
    assert debate_harness.realised(closes, 1, (1, 2, 5)) == {1: pytest.approx(-0.1), 2: pytest.approx(0.1)}
    results = [
        _call("bullish", 5, {1: 0.02, 5: 0.01, 20: -0.03}),  # right, right, wrong; own (5): right
        _call("bearish", 20, {1: 0.01, 5: -0.02}),  # wrong, right; no 20-day return: not scored there
        _call("neutral", 1, {1: 0.05, 5: 0.05, 20: 0.05}),  # no call: never scored
    ]

    def own(row, hits):
        return {"acc_own_h": debate_harness.share(hits), "n_own_h": len(hits)}

    t = debate_harness.table(results, {"call": lambda r: r.direction, "bull": lambda r: "bullish"}, own)
    assert t["call"] == {
        "acc_1d": 0.5, "n_1d": 2, "acc_5d": 1.0, "n_5d": 2, "acc_20d": 0.0, "n_20d": 1, "acc_own_h": 1.0, "n_own_h": 1,
    }  # fmt: skip
    assert t["bull"]["acc_1d"] == 1.0 and t["bull"]["n_5d"] == 3 and t["bull"]["acc_20d"] == 0.5
    assert t["bull"]["acc_own_h"] == pytest.approx(1.0) and t["bull"]["n_own_h"] == 2  # the bearish call's 20d: none
    lines = debate_harness.format_rows({"call": {**t["call"], "directional": 2}})
    # each share with its hits and scored calls, counted by hand from the items above
    assert (
        lines[1] == f"{'call':22s} {'50.0% 1/2':>13s} {'100.0% 2/2':>13s} {'0.0% 0/1':>13s} {'100.0% 1/1':>13s}       2"
    )
    # always bullish on the calls the row made (the neutral one left out): 1d right, right; 5d right, wrong
    p = debate_harness.paired(results, {"call": lambda r: r.direction, "bull": lambda r: "bullish"}, ["bull"],
                              lambda docs: own, of="call")  # fmt: skip
    assert list(p) == ["bull (call's calls)"]
    assert (p["bull (call's calls)"]["n_1d"], p["bull (call's calls)"]["acc_1d"]) == (2, 1.0)
    assert (p["bull (call's calls)"]["n_5d"], p["bull (call's calls)"]["acc_5d"]) == (2, 0.5)
    rows = {"call": lambda r: r.direction, "bull": lambda r: "bullish", "also bull": lambda r: "bullish"}
    assert debate_harness.same_calls(results, rows) == [["bull", "also bull"]]
    assert debate_harness.flag_lines([["a", "b", "c"]], "call") == [
        "FLAG: a, b and c made the same direction call on every call: their accuracies are one result"
    ]
