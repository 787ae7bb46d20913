"""The live 1.5B recordings of one scm day and one debate day
(docs/recorded/) replay byte for byte, with no model loaded: neither the LLM
nor the embedding model (the recording holds the memory's vectors,
fincon.memory.vectors).

A prompt or schema change of these protocols makes a recording stale: this
fails with a cache miss naming the call; re-record with
``python docs/recorded/record.py`` (docs/recorded/README.md)."""

import csv
import importlib.util
import json
from pathlib import Path

import pytest

from fincon.cli.main import main
from fincon.memory.embedders import MiniLMEmbedder

HERE = Path(__file__).resolve().parents[1] / "docs" / "recorded"
spec = importlib.util.spec_from_file_location("record", HERE / "record.py")
record = importlib.util.module_from_spec(spec)
spec.loader.exec_module(record)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(record.DAYS))
def test_a_live_protocol_day_replays_byte_for_byte(name, tmp_path, monkeypatch):
    recorded = json.loads((HERE / "recorded.json").read_text())[name]

    def no_model(self):
        raise AssertionError(f"the replay loaded the embedding model {self.model_dir}")

    monkeypatch.setattr(MiniLMEmbedder, "model", no_model)
    assert main(record.args(name, "replay", tmp_path / "a")) == 0
    assert record.fingerprint(tmp_path / "a") == recorded  # the live run's decisions, byte for byte
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())["strategy_summary"]
    # fallbacks, if any, are counted in both places and stay a minority of the live answers
    assert summary["llm_calls"] > 0 and summary["llm_fallbacks"] == summary["team_fallbacks"]
    assert summary["llm_fallbacks"] <= summary["llm_calls"] / 4
    with (tmp_path / "a" / "llm_runtime.csv").open() as fh:  # every call answered by the recording
        rows = list(csv.DictReader(fh))
    assert rows and all(r["live_calls"] == "0" for r in rows)
    day = [json.loads(line) for line in (tmp_path / "a" / "decisions.jsonl").read_text().splitlines()][0]
    m = day["record"]["manager"]
    if name == "debate":
        d = m["debate"][0]
        assert d["event_id"] == "TSLA-call-2022Q3"
        assert d["final"]["direction"] == d["report"]["direction"]  # the safe debate never flips
        roles = {"earnings", "market", "sentiment", "valuation", "risk", "synthesis"}
        if d["debated"]:
            assert set(d["via"]) == roles | {"trust", "skeptic", "leader"}
        else:  # a neutral report is not debated: the specialists and the synthesis still ran
            assert d["report"]["direction"] == "neutral" and set(d["via"]) == roles
    else:
        assert {"strategist.s0", "strategist.s1", "strategist.s2", "critic"} <= set(m["steps"])
        chosen = [a for a in m["alternatives"] if a["status"] == "chosen"]
        # one alternative chosen, or none survived: hold, positions kept (counted)
        assert len(chosen) == 1 or (summary["scm_holds"] == 1 and day["actions"]["TSLA"] == "hold")
