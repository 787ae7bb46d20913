"""Training benchmark (issue 9): model calls per simulated day in episodes
2..K against episode 1, and wall time per episode, for both brains.

    .venv/bin/python bench/train.py                       # rules: 4 episodes on 2022-01-03..2022-06-30;
                                                          # llm: 3 episodes of 3 days with the 1.5B model
    .venv/bin/python bench/train.py --llm-days 5 --model qwen2.5-coder-0.5b
    .venv/bin/python bench/train.py --skip-rules --llm-days 10 --out /tmp/bt   # keep the trainings and the cache

Short episodes overstate the calls: an episode starts with fresh memories, so
its first day asks every analyst, and an episode after a belief edit re-asks
the analysts whose beliefs changed (their prompts changed) on every day they
are asked; with 3-day episodes the first day is a third of the episode.

Goal: at most 1.5 live model calls per simulated day in episodes 2..K (the
cache answers what did not change and agents whose inputs hash the same
reuse their report). The rules brain makes no model call; its row shows the
asks the team would make (agents not reused), the same reuse the llm brain gets.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from fincon.config import load_config
from fincon.workflow.training import TrainOptions, train

START, END = "2022-01-03", "2022-06-30"


def trading_days_after(start: str, n: int) -> str:
    import pandas as pd

    from fincon.data.sources import make_source

    idx = make_source("sample").load("TSLA", pd.Timestamp(start), pd.Timestamp(END))["Date"]
    days = [d for d in pd.to_datetime(idx) if d >= pd.Timestamp(start)]
    return str(days[min(n, len(days) - 1)].date())


def episode_stats(out: Path) -> list[dict]:
    rows = []
    for ep in sorted((out / "episodes").glob("ep-*")):
        summary = json.loads((ep / "summary.json").read_text())["strategy_summary"]
        days = summary["team_days"]
        asks = 0
        for line in (ep / "decisions.jsonl").read_text().splitlines():
            rec = json.loads(line).get("record") or {}
            asks += sum(a["via"] not in ("reuse", "empty") for a in rec.get("agents", []))
            asks += rec.get("manager", {}).get("via") not in ("reuse", None)
        runtime = ep / "llm_runtime.csv"
        live = 0
        if runtime.is_file():
            import csv

            live = sum(int(r["live_calls"]) for r in csv.DictReader(runtime.open()))
        rows.append({"days": days, "asks_per_day": asks / days, "live_per_day": live / days})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=4)
    ap.add_argument("--llm-episodes", type=int, default=3)
    ap.add_argument("--llm-days", type=int, default=3)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--skip-llm", action="store_true")
    ap.add_argument("--skip-rules", action="store_true")
    ap.add_argument("--out", type=Path, help="keep the trainings (and the LLM cache) in this new directory")
    args = ap.parse_args()
    if args.out and args.out.exists():
        ap.error(f"--out {args.out} exists (its cache would answer the live run); pick a new directory")
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        tmp = args.out or Path(tmp)
        plans = [] if args.skip_rules else [("rules", START, END, args.episodes, None)]
        if not args.skip_llm:
            end = trading_days_after(START, args.llm_days)
            plans.append(
                (
                    "llm",
                    START,
                    end,
                    args.llm_episodes,
                    {"model": args.model, "cache_path": str(tmp / "llm.sqlite"), "concurrency": 1},
                )
            )
        for brain, start, end, k, llm in plans:
            over = {
                "tickers": ["TSLA"],
                "start": start,
                "end": end,
                "strategies": ["fincon"],
                "strategy_params.fincon.brain": brain,
                "strategy_params.fincon.embedder": "hashing",
            }
            cfg = load_config(None, over)
            if llm:
                cfg = cfg.model_copy(update={"llm": llm})
            train(cfg, tmp / brain, TrainOptions(episodes=k), progress=False)
            walls = _per_episode(tmp / brain)
            results[brain] = (episode_stats(tmp / brain), walls, start, end)
    for brain, (stats, walls, start, end) in results.items():
        print(f"\n{brain} brain, TSLA {start}..{end}, {len(stats)} episodes")
        print(f"{'episode':>7} {'days':>5} {'asks/day':>9} {'live calls/day':>15} {'wall s':>8}")
        for i, (s, w) in enumerate(zip(stats, walls), 1):
            print(f"{i:7d} {s['days']:5d} {s['asks_per_day']:9.2f} {s['live_per_day']:15.2f} {w:8.1f}")
        later = stats[1:]
        if later:
            col = "live_per_day" if brain == "llm" else "asks_per_day"
            mean = sum(s[col] for s in later) / len(later)
            print(
                f"episodes 2..K: {mean:.2f} {'live model calls' if brain == 'llm' else 'asks'} per day "
                f"against {stats[0][col]:.2f} in episode 1 (goal <= 1.5 live calls per day)"
            )


def _per_episode(out: Path) -> list[float]:
    """Wall time per episode: between the moments consecutive episodes wrote
    their summary.json (the last file of a run), from the training's start."""
    stamps = [p.stat().st_mtime for p in sorted((out / "episodes").glob("ep-*/summary.json"))]
    start = (out / "config.yaml").stat().st_mtime
    return [b - a for a, b in zip([start] + stamps[:-1], stamps)]


if __name__ == "__main__":
    main()
