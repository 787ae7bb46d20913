"""The shipped demo replays its recorded model calls byte for byte.

A prompt, schema or input change that makes the shipped cache stale fails
here with a cache miss naming the call: re-record with `make record-demo`.
"""

import json

import pytest

from fincon.cli.demo import RECORDED, fingerprint
from fincon.cli.main import main


@pytest.mark.slow
def test_demo_replays_the_recording_byte_for_byte(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["demo", "--out", str(a)]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "fincon" in line and "sma-cross" in line)
    assert "buy-and-hold (benchmark)" in header
    assert "model knowledge (window vs cutoff)       in-training-data" in out  # the model may know this window
    assert (a / "equity.png").is_file() and f"report:        {a / 'report.html'}" in out
    assert fingerprint(a / "fincon") == json.loads(RECORDED.read_text())  # same as the live recording
    summary = json.loads((a / "fincon" / "summary.json").read_text())["strategy_summary"]
    assert summary["llm_calls"] > 0 and summary["team_model_calls"] > 0
    assert main(["demo", "--out", str(b)]) == 0
    for name in (
        "decisions.jsonl",
        "equity.csv",
        "metrics.json",
        "summary.json",
        "llm_usage.csv",
        "llm_audit.jsonl",
        "llm_runtime.csv",
        "config.yaml",
    ):
        assert (a / "fincon" / name).read_bytes() == (b / "fincon" / name).read_bytes(), name
