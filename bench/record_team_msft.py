"""Record (once, on a quiet machine) the live run of the team with the bundled
1.5B model on InvestorBench's MSFT test window, for issue 20 item 7.

    .venv/bin/python bench/record_team_msft.py            # ~2 h on 2 quiet cores: run it in the background
    .venv/bin/python bench/record_team_msft.py --days 5   # a short recording (smoke)

Its cost, measured: the team makes about 3 calls a day on this corpus,
with prompts of 260-950 tokens (the news of a day is long), 13-35 s a call
on 2 cores with nothing else running: 465 calls, about 2 hours. Stopped
part way, the same command resumes it: the calls already in the cache are
replayed and the recording goes on after them.

The dataset is imported from ../shared/data/investorbench/msft.json.gz
(InvestorBench's file, MIT); the recording (the LLM cache, whose prompts
quote it) and its fingerprint go to tests/recordings/investorbench beside
the benchmark's licence, committed, so every clone replays them
(tests/test_team_live_msft.py, byte for byte, where the data is). Prints calls, tokens, fallbacks and wall time per day: the
row of docs/results.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "2020-10-01", "2021-05-06"
NAME = f"team-MSFT-{START}-{END}"
#: the recording and InvestorBench's MSFT file it is made on, committed (tests/recordings/investorbench)
RECORDINGS = ROOT / "tests" / "recordings" / "investorbench"


def shared_dir() -> Path:
    """InvestorBench's files, read from ../shared (third-party text: never copied in)."""
    from fincon.testing import INVESTORBENCH

    return INVESTORBENCH


def recordings() -> Path:
    return RECORDINGS


def args_for(data: Path, cache: Path, mode: str, out: Path, end: str = END) -> list[str]:
    return [
        "backtest",
        "--ticker",
        "MSFT",
        "--strategy",
        "fincon",
        "--brain",
        "llm",
        "--data",
        str(data),
        "--start",
        START,
        "--end",
        end,
        "--llm-model",
        "qwen2.5-coder-1.5b",
        "--llm-cache",
        mode,
        "--llm-cache-path",
        str(cache),
        "--param",
        "fincon.embedder=hashing",
        "--no-benchmark",
        "--no-progress",
        "--out",
        str(out),
    ]


def fingerprint(run: Path) -> str:
    return hashlib.sha256((run / "decisions.jsonl").read_bytes()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, help="record only this many calendar days from the start")
    ap.add_argument("--work", type=Path, default=Path("/tmp/fincon-record-msft"))
    a = ap.parse_args()
    from fincon.cli.main import main as fincon

    shared = shared_dir()
    data = a.work / "ib-msft"
    if not data.is_dir():
        assert fincon(["data", "import", "investorbench", str(shared / "msft.json.gz"), "--out", str(data)]) == 0
    end = END
    if a.days:
        import pandas as pd

        end = str((pd.Timestamp(START) + pd.Timedelta(days=a.days)).date())
    rec = recordings()
    rec.mkdir(parents=True, exist_ok=True)
    cache = rec / f"{NAME}.sqlite"
    t0 = time.perf_counter()
    code = fincon(args_for(data, cache, "read-write", a.work / "live", end))
    wall = time.perf_counter() - t0
    if code != 0:
        return code
    s = json.loads((a.work / "live" / "summary.json").read_text())["strategy_summary"]
    days = max(1, s["team_days"])
    row = {
        "end": end,
        "fingerprint": fingerprint(a.work / "live"),
        "days": s["team_days"],
        "calls_per_day": round(s["llm_calls"] / days, 2),
        "tokens_per_day": round(s["llm_tokens"] / days),
        "prompt_tokens_per_call": round(s["llm_prompt_tokens"] / max(1, s["llm_calls"])),
        "fallbacks": s["team_fallbacks"],
        "wall_s_per_day": round(wall / days, 1),
        "reasks_contradiction": s.get("team_reasks_contradiction"),
        "reasks_language": s.get("team_reasks_language"),
    }
    (rec / f"{NAME}.json").write_text(json.dumps(row, indent=1, sort_keys=True) + "\n")
    print(json.dumps(row, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    os.environ["FINCON_LEDGER"] = "off"  # a bench's runs are no trials: kept out of the user's ledger
    sys.exit(main())
