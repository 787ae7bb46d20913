"""One short live run of the team with a bundled model (the 0.5B one, for
speed; one day, two analysts and the manager): every decision is schema-valid and every citation is one of the
citing agent's inputs that day; fallbacks, if any, are counted, and more
than a quarter of the answers falling back fails the test."""

import json
import os

import pytest

from fincon.agents.reports import AnalystReport
from fincon.cli.main import main

if not os.environ.get("CI"):  # in CI a missing build must fail, not skip
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is built by make install-llm-extras")


@pytest.mark.live
def test_live_team_gives_valid_decisions_with_valid_citations(tmp_path, capsys, recorded_transcripts):
    out = tmp_path / "live"
    code = main(
        [
            "backtest",
            "--ticker",
            "TSLA",
            "--strategy",
            "fincon",
            "--start",
            "2022-10-05",
            "--end",
            "2022-10-06",  # one decision day: the test is about what a live day writes, not many of them
            "--llm-model",
            "qwen2.5-coder-0.5b",
            "--llm-cache-path",
            str(tmp_path / "cache.sqlite"),
            "--param",
            "fincon.embedder=hashing",
            "--param",  # two analysts (one reads a call transcript) and the manager: 3 live calls, not 7
            "fincon.analysts=[news, earnings-call]",
            "--param",  # shorter prompts: the test is about what a live day writes, not how much it reads
            "fincon.analyst_budget_tokens=150",
            "--no-benchmark",
            "--param",
            f"fincon.transcript_cache={recorded_transcripts.path}",  # the model is live, Whisper replayed
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    recorded_transcripts.assert_all_replayed()
    days = [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines()]
    assert len(days) == 1  # the last day makes no decision
    vias = []
    for day in days:
        assert day["actions"]["TSLA"] in ("buy", "sell", "hold")
        rec = day["record"]
        for a in rec["agents"]:
            AnalystReport(
                role="r", ticker="TSLA", insights=a["insights"], direction=a["direction"], confidence=a["confidence"]
            )
            allowed = {x["id"] for x in a["inputs"]}
            assert {c["id"] for i in a["insights"] for c in i["citations"]} <= allowed
            vias.append(a["via"])
        assert set(rec["manager"]["relied_on"]) <= {
            c["id"] for a in rec["agents"] for i in a["insights"] for c in i["citations"]
        } | {x["id"] for a in rec["agents"] for x in a["inputs"]}
    assert "llm" in vias or "fallback" in vias
    # a team that mostly fell back to the rules is not a live team: at most a quarter of the answers
    manager_vias = [d["record"]["manager"]["via"] for d in days]
    answered = [v for v in vias + manager_vias if v in ("llm", "fallback")]
    assert answered and sum(v == "fallback" for v in answered) <= len(answered) / 4, answered
    summary = json.loads((out / "summary.json").read_text())["strategy_summary"]
    assert summary["llm_calls"] >= summary["team_model_calls"] > 0
    assert summary["llm_fallbacks"] == summary["team_fallbacks"]  # counted in both places
