"""Record (once, on a quiet machine) what masking costs the team (issue 43 item 3): the team with the
bundled 1.5B model on InvestorBench's MSFT, 20 sessions from 2020-10-01, named and masked, side by side.

    .venv/bin/python bench/record_masking_msft.py            # ~1 h on 2 quiet cores: run it in the background

Both runs record into one call cache, tests/recordings/investorbench/masking-MSFT-20.sqlite, beside the
benchmark's licence (the prompts quote its texts); the comparison (CR, Sharpe, the decisions that changed,
the leakage audit of each run) goes to masking-MSFT-20.json, which tests/test_team_live_msft.py checks by
replaying both runs with no model loaded. Stopped part way, the same command resumes (cached calls are
replayed). The dataset is imported from ../shared/data/investorbench/msft.json.gz (MIT).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "2020-10-01", "2020-10-28"  # 20 sessions
NAME = "masking-MSFT-20"
RECORDINGS = ROOT / "tests" / "recordings" / "investorbench"


#: what a masked item shows (LLMSettings.mask_items) in the recorded masked run
MASK_ITEMS = "tone"


def args_for(data: Path, cache: Path, mode: str, out: Path, masked: bool) -> list[str]:
    return [
        "backtest", "--ticker", "MSFT", "--strategy", "fincon", "--brain", "llm", "--data", str(data),
        "--start", START, "--end", END, "--llm-model", "qwen2.5-coder-1.5b", "--llm-cache", mode,
        "--llm-cache-path", str(cache), "--param", "fincon.embedder=hashing", "--no-benchmark", "--no-progress",
        "--ledger", "off", "--out", str(out), *(["--anonymize", "--mask-items", MASK_ITEMS] if masked else []),
    ]  # fmt: skip


def compare(named: Path, masked: Path) -> dict:
    """What masking changed: each run's CR and Sharpe, the share of days whose decision differs, and
    the leakage audit of each (fincon.llm.leakage)."""
    from fincon.agents.replayed_sessions import audit_run
    from fincon.llm import leakage

    def metrics(run: Path) -> dict:
        m = json.loads((run / "metrics.json").read_text())
        return {"cr_pct": m["cr_pct"], "sharpe": m["sharpe"], "trades": m.get("n_trades")}

    def decisions(run: Path) -> dict:
        out = {}
        for line in (run / "decisions.jsonl").read_text().splitlines():
            d = json.loads(line)
            out[d["date"]] = d.get("actions")
        return out

    a, b = decisions(named), decisions(masked)
    days = sorted(set(a) & set(b))
    audits = {}
    for name, run in (("named", named), ("masked", masked)):
        res = audit_run(run)
        audits[name] = {**leakage.summary(res), "verdict": res["verdict"]}
    return {
        "window": [START, END],
        "named": metrics(named),
        "masked": metrics(masked),
        "days": len(days),
        "decisions_changed": sum(a[d] != b[d] for d in days),
        "audit": audits,
    }


def prune(cache: Path, runs: list[Path]) -> None:
    """Keep only the calls the two runs made: a re-recording after a prompt changed (the same command
    over the old file) leaves the calls no run asks any more, which a replay never reads."""
    import csv
    import sqlite3

    keys = {r["key"] for run in runs for r in csv.DictReader((run / "llm_calls.csv").open())}
    with sqlite3.connect(cache) as db:
        stale = [k for (k,) in db.execute("select key from calls") if k not in keys]
        db.executemany("delete from calls where key = ?", [(k,) for k in stale])
        if db.execute("select 1 from sqlite_master where name = 'vectors'").fetchone():
            db.executemany("delete from vectors where key = ?", [(k,) for k in stale])
    with sqlite3.connect(cache) as db:
        db.execute("vacuum")
    print(f"{len(stale)} calls no run asks any more removed from {cache.name}", file=sys.stderr)


def main() -> int:
    from fincon.cli.main import main as fincon
    from fincon.testing import INVESTORBENCH

    src = INVESTORBENCH / "msft.json.gz"
    if not src.is_file():
        print(f"no {src}: InvestorBench's files are read from ../shared/data/investorbench", file=sys.stderr)
        return 2
    cache = RECORDINGS / f"{NAME}.sqlite"
    with tempfile.TemporaryDirectory() as d:
        data = Path(d) / "ib-msft"
        assert fincon(["data", "import", "investorbench", str(src), "--out", str(data)]) == 0
        walls = {}
        for masked in (False, True):
            out = Path(d) / ("masked" if masked else "named")
            t0 = time.time()
            assert fincon(args_for(data, cache, "read-write", out, masked)) == 0
            walls["masked" if masked else "named"] = round(time.time() - t0, 1)
        row = compare(Path(d) / "named", Path(d) / "masked")
        prune(cache, [Path(d) / "named", Path(d) / "masked"])
        row["wall_s"] = walls
        for name in ("named", "masked"):
            import hashlib

            row[name]["fingerprint"] = hashlib.sha256((Path(d) / name / "decisions.jsonl").read_bytes()).hexdigest()
    (RECORDINGS / f"{NAME}.json").write_text(json.dumps(row, indent=1, sort_keys=True) + "\n")
    print(json.dumps(row, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
