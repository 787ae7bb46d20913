"""Agent-team benchmark: model calls, wall time per simulated day and the
reuse rate, for each brain, live and replayed, measured side by side.

    .venv/bin/python bench/team.py                 # TSLA; 5 live LLM days (~10 min on 2 cores)
    .venv/bin/python bench/team.py --llm-days 20 --model qwen2.5-coder-0.5b
    .venv/bin/python bench/team.py --llm-days 2 --no-rules --out /tmp/bench-team   # keep the runs
    .venv/bin/python bench/team.py --data /tmp/ib-msft --llm-days 5   # a real corpus (dozens of news a day)
    .venv/bin/python bench/team.py --param fincon.analysts=[news] --param fincon.analyst_budget_tokens=150

``--param fincon.KEY=VALUE`` sets a team parameter for every row, as
``fincon backtest --param`` does (e.g. fewer analysts, shorter prompts: the
smallest live run the test suite makes).

``--data DIR`` runs on a dataset directory written by ``fincon data import``
(its prices and events; the ticker is the dataset's, the window the
InvestorBench test window unless --start/--end say otherwise).

Besides wall time it prints the mean prompt and completion tokens of one
model call per agent kind (from the live run's ``llm_usage.csv``): unlike wall
time they do not depend on what else the machine is doing, so they compare
prompt versions on a shared machine.

Rows:
* rules: the deterministic brain over the whole window (no model);
* llm live: the bundled model (1.5B by default) over the first --llm-days
  days, on a fresh cache; wall time includes loading the model once;
* llm replay: the same run answered from the cache just recorded;
* replay day 1: the first day alone, replayed: mostly a run's fixed cost,
  so the script also prints what a replayed day costs beyond it.

Goals (issue 8): replay >= 100x faster than live; live <= 20 s per simulated
day for one ticker with the 1.5B model on 2 cores; <= 3 model calls per day
on average (the rules row shows how many asks the team makes, since both
brains reuse on the same input hashes).
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from pathlib import Path

from fincon.cli.options import parse_params
from fincon.config import load_config
from fincon.errors import ConfigError
from fincon.workflow.runner import run_config

START = "2022-10-05"
END = "2023-06-09"


#: InvestorBench's test window (``--data``)
IB_START, IB_END = "2020-10-01", "2021-05-06"


def trading_days_after(start: str, n: int, end: str = END, ticker: str = "TSLA", data: Path | None = None) -> str:
    import pandas as pd

    from fincon.data.inputs import open_inputs

    src = (open_inputs("csv", data) if data else open_inputs()).source
    idx = src.load(ticker, pd.Timestamp(start), pd.Timestamp(end))["Date"]
    days = [d for d in pd.to_datetime(idx) if d >= pd.Timestamp(start)]
    return str(days[min(n, len(days) - 1)].date())  # n decision days + the last (no decision)


def run(
    ticker: str,
    start: str,
    end: str,
    brain: str,
    out: Path,
    llm: dict | None = None,
    data: Path | None = None,
    params: dict | None = None,
) -> dict:
    overrides = {
        "tickers": [ticker],
        "start": start,
        "end": end,
        "strategies": ["fincon"],
        "benchmark": False,
        "strategy_params.fincon.embedder": "hashing",
        **{f"strategy_params.fincon.{k}": v for k, v in (params or {}).items()},
        "strategy_params.fincon.brain": brain,  # each row's own
    }
    if data is not None:  # a dataset directory: its prices and its events (the runner reads both)
        overrides.update({"data.source": "csv", "data.dir": str(data.absolute())})
    if llm:
        overrides["llm"] = llm
    cfg = load_config(None, overrides)
    t0 = time.perf_counter()
    report = run_config(cfg, out, progress=False)
    wall = time.perf_counter() - t0
    s = report.results["fincon"].strategy_summary
    days = s["team_days"]
    asks = 0
    agents = 0
    for line in (report.out / "decisions.jsonl").read_text().splitlines():
        rec = json.loads(line).get("record")
        if rec:
            for a in rec["agents"] + [rec["manager"]]:
                agents += 1
                asks += a["via"] not in ("reuse", "empty")
    return {
        "days": days,
        "wall_s": wall,
        "s_per_day": wall / days,
        "asks_per_day": asks / days,
        "model_calls_per_day": s.get("llm_calls", 0) / days if brain == "llm" else 0.0,
        "reuse_rate": s["team_reused"] / agents if agents else 0.0,
        "fallbacks": s["team_fallbacks"],
        "live_calls": s.get("llm_live_calls"),
        "tokens": tokens_by_kind(report.out),
    }


def tokens_by_kind(out: Path) -> dict[str, list[int]]:
    """agent kind (role, or manager) -> [calls, prompt tokens, completion tokens] from llm_usage.csv."""
    path = out / "llm_usage.csv"
    kinds: dict[str, list[int]] = {}
    if path.is_file():
        with path.open(newline="") as fh:
            for row in csv.DictReader(fh):
                k = kinds.setdefault(row["agent"].split("/")[0], [0, 0, 0])
                for n, col in enumerate(("calls", "prompt_tokens", "completion_tokens")):
                    k[n] += int(row[col])
    return kinds


def print_tokens(tokens: dict[str, list[int]], days: int) -> None:
    total = [sum(v[n] for v in tokens.values()) for n in range(3)]
    print(f"\n{'tokens per call':16} {'calls':>6} {'calls/day':>10} {'prompt':>8} {'completion':>11}")
    for name, (calls, pt, ct) in sorted(tokens.items()) + [("all", total)]:
        if calls:
            print(f"{name:16} {calls:6d} {calls / days:10.2f} {pt / calls:8.0f} {ct / calls:11.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ticker", default="TSLA")
    ap.add_argument("--llm-days", type=int, default=5)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--no-rules", action="store_true", help="skip the rules row (the full window)")
    ap.add_argument("--out", type=Path, help="keep the runs (and the recorded cache) in this directory")
    ap.add_argument("--data", type=Path, metavar="DIR", help="a dataset directory (fincon data import)")
    ap.add_argument("--start", help="first day (default: the sample's 2022-10-05, or 2020-10-01 with --data)")
    ap.add_argument("--end", help="last day of the rules row (default 2023-06-09, or 2021-05-06 with --data)")
    ap.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="fincon.KEY=VALUE",
        help="a team parameter for every row, repeatable (as fincon backtest --param)",
    )
    args = ap.parse_args()
    try:
        named = parse_params(args.param)
    except ConfigError as exc:
        ap.error(str(exc))
    other = sorted(set(named) - {"fincon"})
    if other:
        ap.error(f"--param {other[0]}.…: only the team's parameters (fincon.KEY=VALUE)")
    params = named.get("fincon", {})
    if "brain" in params:
        ap.error("--param fincon.brain: each row sets its own brain (rules, llm live, llm replay)")
    if args.out and args.out.exists():
        ap.error(f"--out {args.out} exists (its cache would answer the live run); pick a new directory")
    start = args.start or (IB_START if args.data else START)
    last = args.end or (IB_END if args.data else END)
    ticker = args.ticker
    if args.data:
        ticker = json.loads((args.data / "dataset.json").read_text())["tickers"][0]
    rows = {}
    with tempfile.TemporaryDirectory(prefix="bench-team-") as tmp:
        tmp = args.out or Path(tmp)
        if not args.no_rules:
            rows["rules"] = run(ticker, start, last, "rules", tmp / "rules", data=args.data, params=params)
        end = trading_days_after(start, args.llm_days, last, ticker, args.data)
        cache = str(tmp / "llm.sqlite")
        llm = {"model": args.model, "cache_path": cache, "concurrency": 1}
        rw, replay = {**llm, "cache": "read-write"}, {**llm, "cache": "replay"}
        rows["llm live"] = run(ticker, start, end, "llm", tmp / "live", rw, args.data, params)
        rows["llm replay"] = run(ticker, start, end, "llm", tmp / "replay", replay, args.data, params)
        # the first day alone, replayed: a run's fixed cost (config, data, memory store, the
        # run directory and its plots), which a short window charges to few days
        first = trading_days_after(start, 1, last, ticker, args.data)
        rows["replay day 1"] = run(ticker, start, first, "llm", tmp / "replay1", replay, args.data, params)
    print(
        f"{ticker}: rules {start}..{last}; llm ({args.model}) {start}..{end}"
        + (f"; data {args.data}" if args.data else "")
        + "".join(f"; --param {p}" for p in args.param)
    )
    print(f"{'':12} {'days':>5} {'s/day':>9} {'asks/day':>9} {'calls/day':>10} {'reuse':>6} {'fallbacks':>9}")
    for name, r in rows.items():
        print(
            f"{name:12} {r['days']:5d} {r['s_per_day']:9.3f} {r['asks_per_day']:9.2f} "
            f"{r['model_calls_per_day']:10.2f} {r['reuse_rate']:6.1%} {r['fallbacks']:9d}"
        )
    live, replay, one = rows["llm live"], rows["llm replay"], rows["replay day 1"]
    print(f"\nreplay is {live['s_per_day'] / replay['s_per_day']:.0f}x faster than live (goal >= 100x), whole runs")
    if replay["days"] > one["days"]:
        marginal = (replay["wall_s"] - one["wall_s"]) / (replay["days"] - one["days"])
        print(
            f"a replayed day beyond the first costs {marginal:.3f} s (a one-day replay, mostly fixed cost: {one['wall_s']:.2f} s): "
            f"{live['s_per_day'] / marginal:.0f}x faster than a live day"
        )
    print(f"live: {live['s_per_day']:.1f} s per simulated day (goal <= 20 s with the 1.5B model on 2 cores)")
    print(f"team asks per day (llm live): {live['asks_per_day']:.2f} (goal <= 3)")
    if "rules" in rows:  # not the llm team's rate: the rules brain's reuse key holds each item's decayed weight
        print(
            f"team asks per day on the full window (rules brain, whose reuse key holds each item's weight, so "
            f"it asks more than the llm brain): {rows['rules']['asks_per_day']:.2f}"
        )
    print_tokens(live["tokens"], live["days"])


if __name__ == "__main__":
    main()
