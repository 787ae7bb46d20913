"""``fincon demo``: the agent team trading TSLA through Q4 2022, offline.

The demo is the main job as a user runs it: the FinCon team (LLM brain, the
bundled Qwen2.5-Coder-1.5B) trading TSLA (buy = long, sell = short, hold)
over 2022-10-05..2022-12-30 of the bundled sample, beside an SMA crossover
and the buy-and-hold benchmark, its CVaR alerts marked on the equity plot,
and the HTML report of the run. Its model calls and the Whisper transcripts
of the calls it hears are shipped in the package (``fincon/data/demo/``), so
``fincon demo`` replays them: no model is loaded, nothing is downloaded, and
it finishes in about a minute. The window lies inside the model's training
data (its cutoff is bounded by the Qwen2.5 release, 2024-09-19): the run says
so, and its figures show the machinery, not the model's skill.

``fincon demo --record`` (``make record-demo``) runs the same config live
and rewrites the shipped cache: needed whenever a prompt, an answer schema
or anything else an agent reads changes (the replay test then fails with a
cache miss naming the call). It takes about 25 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Annotated

from fincon import cli
from fincon.cli.flags import Args, add
from fincon.config import load_config
from fincon.errors import FinconError
from fincon.flag import Flag

DEMO_DIR = Path(__file__).resolve().parents[1] / "data" / "demo"
CACHE = DEMO_DIR / "llm-cache.sqlite"
TRANSCRIPTS = DEMO_DIR  # Whisper transcripts under transcripts/, keyed by audio hash
#: hashes of the live recording's outputs: a replay must match them (tests/test_demo.py)
RECORDED = DEMO_DIR / "recorded.json"
REPRODUCED = (
    "decisions.jsonl",
    "equity.csv",
    "metrics.json",
    "positions.csv",
    "trades.csv",
    "llm_usage.csv",
    "llm_audit.jsonl",
)

DEMO = {
    "tickers": ["TSLA"],
    "start": "2022-10-05",
    "end": "2022-12-30",
    "strategies": ["fincon", "sma-cross"],
    "strategy_params": {
        "fincon": {
            "brain": "llm",
            # hashing embeddings: bit-for-bit the same ranking on every CPU, so
            # the shipped replay matches on any machine (MiniLM's float sums may not)
            "embedder": "hashing",
            "transcript_cache": str(TRANSCRIPTS),
        },
    },
    "llm": {"model": "qwen2.5-coder-1.5b", "concurrency": 1},
}


class DemoArgs(Args):
    out: Annotated[str, Flag(help="run directory, replaced if it holds an earlier run (default {default})")] = (
        "runs/demo"
    )
    record: Annotated[bool, Flag(help="run the model live and rewrite the shipped cache")] = False
    as_json: Annotated[bool, Flag("--json", help="print the metrics as JSON")] = False


COMMAND = "demo"
SUMMARY = "the agent team trading TSLA beside an SMA crossover and buy-and-hold (replayed, offline)"
HELP = __doc__.split("\n\n", 1)[1].replace("``", "`")
EXAMPLES = (
    "examples:\n  fincon demo\n  fincon demo --out runs/my-demo\n"
    "  fincon demo --record        # re-record the shipped cache (~25 min on 2 cores)\n"
)


def register(p: argparse.ArgumentParser) -> None:
    add(p, DemoArgs)
    p.set_defaults(func=run)


#: a recording goes here first and replaces the shipped cache only when complete, so
#: the shipped cache holds exactly the calls of one recording (no stale rows) and a
#: failed recording loses nothing
RECORDING = CACHE.with_name("llm-cache.recording.sqlite")


def demo_config(record: bool = False):
    llm = {
        **DEMO["llm"],
        "cache": "read-write" if record else "replay",
        "cache_path": str(RECORDING if record else CACHE),
    }
    return load_config(None, {**DEMO, "llm": llm})


def seal(path: Path = CACHE) -> None:
    """Fold the write-ahead log into the file and leave it in rollback mode,
    so the shipped cache is one file a read-only replay can open."""
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
    finally:
        conn.close()


def run(args: argparse.Namespace) -> int:
    if not args.record and not CACHE.is_file():
        raise FinconError(
            f"the demo's recorded cache {CACHE} is missing; run `fincon demo --record` "
            "(or `make record-demo`) to record it"
        )
    cfg = demo_config(args.record)
    if args.record:
        for leftover in RECORDING.parent.glob(RECORDING.name + "*"):
            leftover.unlink()
    code = cli.run_and_report(cfg, args.out, as_json=args.json, replace=True, html_report=True)
    if args.record and code == 0 and RECORDING.is_file():
        seal(RECORDING)
        os.replace(RECORDING, CACHE)
        RECORDED.write_text(json.dumps(fingerprint(Path(args.out) / "fincon"), indent=2, sort_keys=True) + "\n")
    return code


def fingerprint(team_run: Path) -> dict[str, str]:
    """SHA-256 of the team run's outputs that a replay must reproduce byte for byte."""
    return {name: hashlib.sha256((team_run / name).read_bytes()).hexdigest() for name in REPRODUCED}
