"""Decisions that mean what they say and do not whipsaw: a model answer
whose action and size contradict each other, or that leaves the prompt's
language, is re-asked (counted); the rules manager keeps a held position
until the consolidated evidence against it passes the neutral band, the
hold band and the trading cost."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from fincon.agents.brains import ManagerTask, rules_manager
from fincon.agents.reports import AnalystReport, Insight, InsightAnswer, TickerAnswer, foreign_script
from fincon.agents.team.strategy import reask_counts


def test_buy_with_size_zero_and_foreign_script_are_invalid_answers():
    with pytest.raises(ValidationError, match="contradiction: action 'buy' with size 0"):
        TickerAnswer(action="buy", size=0.0, rationale="strong demand", relied_on=[])
    assert TickerAnswer(action="hold", size=0.0, rationale="wait", relied_on=[]).size == 0.0
    with pytest.raises(ValidationError, match="language: write in English"):
        InsightAnswer(text="indicating strong业绩", cites=["E1"])
    assert foreign_script("Nestlé's café, 5% up") is None and foreign_script("Umsatz стал") == "с"
    events = [
        {"event": "reask", "error": "contradiction: action 'buy' with size 0"},
        {"event": "reask", "error": "insights.0.text: language: write in English"},
        {"event": "failure", "errors": ["contradiction: x", "contradiction: y"]},
    ]
    assert reask_counts(events) == {
        "team_reasks_contradiction": 1,
        "team_resolved_contradiction": 1,
        "team_reasks_language": 1,
        "team_resolved_language": 0,
    }


def _task(score: float, held: float, band: float = 0.1, cost: float = 0.0) -> ManagerTask:
    d = "bullish" if score > 0 else "bearish" if score < 0 else "neutral"
    r = AnalystReport(
        role="news", ticker="T", direction=d, confidence=abs(score), insights=[Insight(text="x", citations=[])]
    )
    return ManagerTask(
        day="2022-10-05",
        tickers=("T",),
        reports={"T": [r]},
        weights={"news": 1.0},
        position={"T": held},
        hold_band=band,
        unit_cost={"T": cost},
    )


@pytest.mark.parametrize(
    "score,held,band,cost,action",
    [
        (+0.10, 0.0, 0.1, 0.0, "buy"),  # flat: the neutral band (0.05) alone
        (-0.10, 1.0, 0.1, 0.0, "hold"),  # long, evidence against by 0.10 < 0.05 + 0.10: keep
        (-0.20, 1.0, 0.1, 0.0, "sell"),  # beyond 0.15: reverse
        (+0.40, 1.0, 0.1, 0.0, "hold"),  # same side: keep, no re-sizing trade
        (-0.20, 1.0, 0.1, 0.001, "hold"),  # a flip trades 2 units at 10 bps: 0.15 + 25 x 0.002 = 0.20 needed
        (+0.06, 0.0, 0.1, 0.001, "hold"),  # opening one unit at 10 bps needs 0.05 + 0.025
        (-0.10, 1.0, 0.0, 0.0, "sell"),  # hold_band 0: the old behaviour, any sign change beyond the band
    ],
)
def test_rules_manager_holds_until_the_evidence_changes_enough(score, held, band, cost, action):
    assert rules_manager(_task(score, held, band, cost)).actions["T"] == action


@pytest.mark.parametrize(
    "score,held,band,answer,kept",
    [
        (-0.10, 1.0, 0.1, "sell", True),  # the model reverses on 0.10 of evidence: below 0.15, kept
        (-0.20, 1.0, 0.1, "sell", False),  # beyond 0.15: the model's reversal stands
        (+0.30, 1.0, 0.1, "sell", True),  # the evidence is on the held side: kept
        (-0.10, 1.0, 0.0, "sell", False),  # hold_band 0 (the default): the model decides alone
        (-0.10, 0.0, 0.1, "sell", False),  # nothing held: opening is the model's call
        (-0.10, 1.0, 0.1, "buy", False),  # same side as held: not a reversal
    ],
)
def test_the_hold_band_applies_to_a_model_manager_too(score, held, band, answer, kept):
    from fincon.agents.brains import Answer, hold_band_check
    from fincon.agents.protocols.fincon import FinConManager
    from fincon.agents.reports import ManagerReport

    task = _task(score, held, band)
    said = ManagerReport(actions={"T": answer}, size=1.0, rationale="model", relied_on=[])
    got, note = hold_band_check(task, said)
    assert (got.actions["T"] == "hold") is kept and (note is not None) is kept

    class _Brain:  # answers as a model would, whatever it is asked
        def answer(self, q):
            return Answer(said, "llm", 1)

    mgr = FinConManager()
    decision, _, rec = mgr.decide(_Brain(), task, None, ("T",))
    assert decision.actions["T"] == ("hold" if kept else answer)
    assert ("hold_band" in rec) is kept and mgr.summary() == {"team_hold_band_kept": int(kept)}
    if kept:  # "hold" keeps what is held: the long stays on the book
        assert decision.weights.get("T") is None or decision.weights["T"] == pytest.approx(held)


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_every_day_that_holds_a_position_says_what_it_rests_on_and_what_it_leaves(tmp_path):
    """decisions.jsonl keeps the decision (buy, sell, hold) apart from the book
    it leaves (long, short, flat and size); a day that keeps or opens a
    position cites evidence (when the manager cited none, the reports on the
    held side, said so); a rationale never says "hold" for a day that sells."""
    from fincon.cli.main import main

    out = tmp_path / "run"
    argv = ["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--brain", "rules", "--start", "2022-10-05",
            "--end", "2022-12-30", "--no-progress", "--no-benchmark", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    days = [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines()]
    held = [d for d in days if d["position"]["TSLA"]["side"] != "flat"]
    assert len(held) > 20
    assert all(d["evidence"] for d in held)
    filled = [d for d in held if d["record"].get("evidence_basis")]
    assert filled and all(not d["record"]["manager"].get("relied_on") for d in filled)
    book = 0.0
    for d in days:
        pos = d["position"]["TSLA"]
        if d.get("weights"):  # a trade: the target it sets
            book = d["weights"]["TSLA"]
            assert pos["size"] == pytest.approx(abs(book), abs=1e-6)
        else:  # a hold: the position as held (its weight drifts with the price)
            assert (pos["size"] > 0) == (book != 0)
        assert pos["side"] == ("long" if book > 0 else "short" if book < 0 else "flat")
        action = d["actions"]["TSLA"]
        if action != "hold":
            assert "-> hold" not in d["rationale"]  # the risk cut restates a kept position as a trade
    assert any(d["actions"]["TSLA"] == "hold" and d["position"]["TSLA"]["side"] != "flat" for d in days)


def test_an_alert_cuts_a_held_stock_to_part_of_its_usual_size_once_not_again_and_again():
    """Found in review: on each alert day the rules manager cut a held position by the exposure again,
    so a short of 0.45 of the book went to 0.2, 0.1, 0.05 over three alert days (and stayed there), and
    a note said "exposure cut to 50%" on days the position did not move. It is cut to the exposure's part
    of the size its view asks for (0.5 here) and no further, and the note says when it is within it."""
    from dataclasses import replace

    first = rules_manager(replace(_task(-0.02, -0.45), exposure=0.5))
    assert first.actions == {"T": "sell"} and first.size == 0.25
    assert "the held short is kept, smaller" in first.rationale
    again = rules_manager(replace(_task(-0.02, -0.25), exposure=0.5))
    assert again.actions == {"T": "hold"} and "the held short, 25% of the book, is within it already" in again.rationale
    full = rules_manager(replace(_task(-0.9, -1.0), exposure=0.5))  # a strong view's usual size is the whole book
    assert full.actions == {"T": "sell"} and full.size == 0.5


def test_each_traded_ticker_relies_on_its_own_evidence_whatever_the_order():
    """Found in review: the rules manager cut the day's evidence at five ids in the order of --tickers, so
    the first ticker took every slot (AAPL held 39 days on no evidence of its own) and only its memories
    were rewarded: reversing --tickers changed the trades (CR -7.914 against -7.616 %)."""
    from fincon.agents.reports import Citation

    def rep(t, role, n):
        cites = [Citation(id=f"{t}-{role}-{k}", date="2022-10-04", source="news") for k in range(n)]
        return AnalystReport(role=role, ticker=t, direction="bullish", confidence=0.8,
                             insights=[Insight(text="x", citations=cites)])  # fmt: skip

    reports = {"AAA": [rep("AAA", r, 3) for r in ("news", "10-q", "10-k")], "ZZZ": [rep("ZZZ", "news", 2)]}
    weights = {"news": 1.0, "10-q": 1.0, "10-k": 1.0}

    def relied(order):
        task = ManagerTask(day="2022-10-05", tickers=order, reports=reports, weights=weights)
        return rules_manager(task).relied_on

    assert relied(("AAA", "ZZZ")) == relied(("ZZZ", "AAA"))
    got = relied(("AAA", "ZZZ"))
    assert [c for c in got if c.startswith("ZZZ")] == ["ZZZ-news-0", "ZZZ-news-1"]
    assert len([c for c in got if c.startswith("AAA")]) == 5
