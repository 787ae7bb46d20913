"""The report card (issue 32 item 4): each row's verdict from what the
directory holds, a missing measure said as such, calibration by hand."""

from __future__ import annotations

import json

import pytest

from fincon.cli.main import main
from fincon.report.card import calibration, card

RUN = ["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--brain", "rules", "--start", "2022-10-05",
       "--end", "2022-11-15", "--no-progress", "--no-benchmark"]  # fmt: skip


def _rows(c):
    return {r["point"]: r for r in c["rows"]}


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_a_run_without_costs_fails_frictions_and_one_with_them_passes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*RUN, "--out", "free"]) == 0
    assert main([*RUN, "--commission-model", "per-share", "--participation", "0.025", "--fill", "next-open",
                 "--out", "dear"]) == 0  # fmt: skip
    free, dear = _rows(card(tmp_path / "free")), _rows(card(tmp_path / "dear"))
    assert free["frictions"]["verdict"] == "fail" and "without costs" in free["frictions"]["measured"]
    assert dear["costs"]["verdict"] == dear["volume caps"]["verdict"] == dear["next-open fills"]["verdict"] == "pass"
    assert free["temporal integrity"]["verdict"] == "pass" and free["temporal integrity"]["measured"] == "no-model"
    assert free["counterfactual robustness"]["verdict"] == "fail"  # no placebo: said, in the table
    assert free["long horizons"]["verdict"] == "fail" and free["numerical execution"]["verdict"] == "not measured"
    capsys.readouterr()
    assert main(["report", "--card", str(tmp_path / "free"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["failed"] == card(tmp_path / "free")["failed"]


def test_calibration_by_hand():
    def day(close, next_close, agents):
        return [
            {"record": {"closes": {"T": close}, "agents": agents}},
            {"record": {"closes": {"T": next_close}, "agents": []}},
        ]

    up = {"agent": "news/T", "direction": "bullish", "confidence": 0.8}
    down = {"agent": "10-q/T", "direction": "bearish", "confidence": 0.6}
    flat = {"agent": "data/T", "direction": "neutral", "confidence": 0.3}
    cal = calibration(day(100.0, 101.0, [up, down, flat]))  # the close rose: news right, 10-q wrong
    assert cal["calls"] == 3 and cal["directional"] == 2  # a neutral call counts in Brier (p = 0.5), not in hits
    assert cal["brier"] == pytest.approx(((0.9 - 1) ** 2 + (0.2 - 1) ** 2 + (0.5 - 1) ** 2) / 3)
    assert cal["by_analyst"] == {"10-q": {"n": 1, "hit_rate": 0.0}, "news": {"n": 1, "hit_rate": 1.0}}


def test_a_rolling_card_takes_the_worst_window_label_of_the_team():
    from fincon.report.card import _rolling_knowledge

    summary = [
        {"strategy": "fincon", "model_knowledge": "after-cutoff 4/6, in-training-data 2/6"},
        {"strategy": "buy-and-hold", "model_knowledge": "no-model"},
    ]
    assert _rolling_knowledge({"summary": summary}) == {"label": "in-training-data"}
    assert _rolling_knowledge({"summary": summary[1:]}) == {}  # no team row: not measured
    assert _rolling_knowledge({"summary": [{"strategy": "fincon", "model_knowledge": "no-model"}]}) == {
        "label": "no-model"
    }
