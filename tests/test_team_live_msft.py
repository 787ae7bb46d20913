"""The live 1.5B run of the team on InvestorBench's MSFT test window
(recorded by bench/record_team_msft.py into tests/recordings/investorbench,
beside the corpus its prompts quote) replays byte for byte with no model
loaded. Skips until the recording is made; a prompt change makes the
recording stale and this fails with a cache miss naming the call."""

import csv
import importlib.util
import json
from pathlib import Path

import pytest

from fincon.cli.main import main

BENCH = Path(__file__).resolve().parents[1] / "bench" / "record_team_msft.py"
spec = importlib.util.spec_from_file_location("record_team_msft", BENCH)
record = importlib.util.module_from_spec(spec)
spec.loader.exec_module(record)
SHARED = record.shared_dir()
CACHE = record.recordings() / f"{record.NAME}.sqlite"
ROW = record.recordings() / f"{record.NAME}.json"

pytestmark = [
    pytest.mark.skipif(
        not (CACHE.is_file() and ROW.is_file()), reason=f"no recording at {CACHE} (bench/record_team_msft.py makes it)"
    ),
    pytest.mark.skipif(not (SHARED / "msft.json.gz").is_file(), reason="../shared/data/investorbench is absent"),
]


@pytest.mark.slow
def test_the_live_msft_run_replays_byte_for_byte(tmp_path):
    row = json.loads(ROW.read_text())
    data = tmp_path / "ib-msft"
    assert main(["data", "import", "investorbench", str(SHARED / "msft.json.gz"), "--out", str(data)]) == 0
    assert main(record.args_for(data, CACHE, "replay", tmp_path / "a", row["end"])) == 0
    assert record.fingerprint(tmp_path / "a") == row["fingerprint"]
    with (tmp_path / "a" / "llm_runtime.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(r["live_calls"] == "0" for r in rows)
    s = json.loads((tmp_path / "a" / "summary.json").read_text())["strategy_summary"]
    assert s["team_fallbacks"] == row["fallbacks"]
    assert s["team_fallbacks"] <= s["llm_calls"] / 4  # a team that mostly fell back is not a live team
