"""The FinGPT-style single agent (issue 33 item 2): each item's sentiment by
the model (or the lexicon), a position from the net score, through the same
client, cache and fallbacks as the team; point in time for its items too."""

from __future__ import annotations

import json

import pandas as pd

from fincon.agents.finsent import FinSent, FinSentParams
from fincon.llm import LLMClient, UsageLedger
from fincon.llm.settings import LLMSettings
from fincon.testing import Scripted, backtest, market_for

START, END = pd.Timestamp("2022-10-05"), pd.Timestamp("2022-11-30")


def _run(tmp, events="sample", client=None, brain="rules", market=None):
    s = FinSent(FinSentParams(brain=brain, events=events), LLMSettings() if brain == "llm" else None, client)
    m = market if market is not None else market_for(["TSLA"], start=START, end=END)
    return backtest(m, s, tmp), s


def test_the_model_scores_each_item_and_a_bad_answer_falls_back_counted(tmp_path):
    answers = ['{"sentiment": "positive"}', "not json", "still not json"] + ['{"sentiment": "negative"}'] * 2000
    client = LLMClient(Scripted(answers), ledger=UsageLedger())
    res, s = _run(tmp_path / "llm", client=client, brain="llm")
    first = res.decisions[0]
    scored = first["record"]["finsent"]
    assert scored[0]["via"] == "llm" and scored[0]["score"] == 1
    assert scored[1]["via"] == "fallback" and s.fallbacks == 1  # counted and logged, never a quiet hold
    assert all(any(len(k) == 64 for k in d["evidence"]) for d in res.decisions if d["record"]["finsent"])
    later = [d for d in res.decisions[1:] if d["record"]["finsent"]]
    assert later and all(d["actions"]["TSLA"] in ("sell", "hold") for d in later)  # negative from then on


def test_the_lexicon_brain_is_deterministic(tmp_path):
    a, _ = _run(tmp_path / "a")
    b, _ = _run(tmp_path / "b")
    assert [json.dumps(d, sort_keys=True) for d in a.decisions] == [json.dumps(d, sort_keys=True) for d in b.decisions]
    assert sum(1 for d in a.decisions if d.get("weights")) > 3
