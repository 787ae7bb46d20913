"""Every evaluation that asks a model shows a progress bar of its questions
with an ETA (an hour of a 1.5B's calls was an hour of a silent terminal):
its total is the number of questions the evaluation asks, each one counted
once, and ``--no-progress`` hides it. The bar is tqdm's; a recorder stands
in for it so the counts can be read."""

from __future__ import annotations

import datetime as dt

import pytest

from fincon.agents.brains import RulesBrain
from fincon.cli.main import main
from fincon.data.aliases import NAMES
from fincon.data.events.sources import build_store
from fincon.eval import extraction, lookahead, progress
from fincon.llm import LLMClient, UsageLedger
from fincon.testing.doubles import Clairvoyant
from fincon.testing.markets import market_for


class Recorder:
    """tqdm's face as the evaluations use it: a context manager that counts ``update()``."""

    bars: list[Recorder] = []

    def __init__(self, **kw):
        self.kw, self.n = kw, 0
        Recorder.bars.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        self.n += n


@pytest.fixture
def bars(monkeypatch):
    Recorder.bars = []
    monkeypatch.setattr(progress, "tqdm", Recorder)
    return Recorder.bars


def test_the_lookahead_bar_counts_every_question_named_and_masked(bars):
    import pandas as pd

    closes = market_for(["TSLA"], start=pd.Timestamp("2022-01-03"), end=pd.Timestamp("2023-06-09")).frame("TSLA")
    events = build_store([{"type": "sample"}], ("TSLA", "MSFT")).all_events()
    client = LLMClient(Clairvoyant({"TSLA": closes["close"]}), ledger=UsageLedger())
    res = lookahead.run(
        client, "TSLA", dt.date(2022, 10, 5), dt.date(2023, 3, 31), closes["close"], events, name="Tesla",
        candidates=sorted(NAMES), samples=7, seed=1, anonymize=True, progress=True,
    )  # fmt: skip
    asked = sum(len(qs) for qs in res["questions"].values())
    assert asked == 2 * (3 * 7 + 7)  # named and masked: 3 recall questions a day and 7 items
    (bar,) = bars
    assert (bar.kw["total"], bar.n, bar.kw["disable"], bar.kw["desc"]) == (asked, asked, False, "lookahead TSLA")


def test_a_library_call_draws_no_bar(bars):
    out = list(progress.each([1, 2, 3], "x", enabled=False))
    assert out == [1, 2, 3] and bars[0].kw["disable"] is True and bars[0].n == 3


@pytest.mark.parametrize("hide", [False, True])
def test_eval_numeric_shows_its_questions_and_no_progress_hides_them(bars, hide, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "numeric", "--limit", "5", *(["--no-progress"] if hide else [])]) == 0
    (bar,) = bars
    assert (bar.kw["total"], bar.n, bar.kw["disable"], bar.kw["unit"]) == (5, 5, hide, "question")


def test_eval_debate_counts_the_calls_it_debates(bars, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "debate", "--tickers", "TSLA"]) == 0
    (bar,) = bars
    assert bar.kw["desc"] == "debate TSLA" and bar.kw["unit"] == "event" and bar.kw["disable"] is False
    assert bar.n == bar.kw["total"] > 0
    assert f"{bar.kw['total']} " in capsys.readouterr().out  # the table's count of calls scored


def test_the_extraction_bars_count_filings_then_figures(bars):
    text = "Revenue was $12.5 million in the quarter, up from $10.1 million. Margin rose to 41.2%."
    cases, _ = extraction.build_cases([("f1", text), ("f2", text)], RulesBrain(), per_filing=2, progress=True)
    extraction.check(cases, {"f1": text, "f2": text}, RulesBrain(), progress=True)
    restating, checking = bars
    assert (restating.kw["total"], restating.n, restating.kw["unit"]) == (2, 2, "filing")
    assert (checking.kw["total"], checking.n, checking.kw["unit"]) == (len(cases), len(cases), "figure")
    assert len(cases) == 4
