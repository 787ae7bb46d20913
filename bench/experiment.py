"""Experiment benchmark (issue 11): the same small experiment with the local
(serial) executor and with Ray on a local cluster, wall time side by side.

    .venv/bin/python bench/experiment.py                  # rules brain, 2 repeats, Ray on 2 CPUs
    .venv/bin/python bench/experiment.py --repeats 4 --cpus 4
    .venv/bin/python bench/experiment.py --rolling        # issue 22: rolling windows per minute, 1 and 2 workers

With ``--rolling`` it times a small rolling evaluation (``fincon experiment
--rolling 1m --step 1m`` over 2022-03..06 on TSLA and MSFT (the bundled corpus), one training
episode) with the local executor (1 and 2 worker processes, ``--workers``),
Ray on 1 CPU and Ray on 2 CPUs, prints windows per minute for each, and
checks that the four ``summary.csv`` are byte-identical.

Each executor runs in a fresh `fincon experiment` process (as a user runs
it), into its own directory; the results must be byte-identical. Ray's fixed
costs are measured apart: starting and stopping the local cluster, and a
fresh worker process (each one imports fincon's stack again; a worker now
runs up to 8 units). With units of a few seconds on 2 cores these costs can outweigh the
parallelism: the ratio printed is what it is.
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WINDOWS = [
    "--train-start",
    "2022-04-01",
    "--train-end",
    "2022-04-29",
    "--test-start",
    "2022-05-02",
    "--test-end",
    "2022-05-31",
]


def experiment(out: Path, repeats: int, episodes: int, ablations: str, extra: list[str]) -> float:
    cmd = [
        sys.executable,
        "-m",
        "fincon.cli.main",
        "experiment",
        "--ticker",
        "TSLA",
        "--brain",
        "rules",
        "--events",
        "sample",
        "--param",
        "fincon.transcripts=text",
        *WINDOWS,
        "--repeats",
        str(repeats),
        "--episodes",
        str(episodes),
        "--ablations",
        ablations,
        "--no-progress",
        "--json",
        "--out",
        str(out),
        *extra,
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        executor = "ray" if "--executor" in extra else "local"
        sys.exit(f"bench/experiment.py: the {executor} run failed: {proc.stderr.strip()}")
    return wall


def ray_fixed_costs(cpus: int, units: int) -> tuple[float, float]:
    """(cluster start + stop, seconds per unit that only imports what a unit
    imports, in a fresh worker, ``cpus`` at a time)."""
    from fincon.workflow.ray_executor import RayExecutor

    imports = functools.partial(exec, "import chromadb, fincon.workflow.training, fincon.agents.team")
    t0 = time.perf_counter()
    with RayExecutor(cpus=cpus) as ex:
        ex([str], lambda i, r: None)  # starts the cluster
        started = time.perf_counter()
        ex([imports] * units, lambda i, r: None)
        per_unit = (time.perf_counter() - started) / units
    return time.perf_counter() - t0 - per_unit * units, per_unit


ROLLING = [
    "--rolling",
    "1m",
    "--step",
    "1m",
    "--rolling-start",
    "2022-03-01",
    "--rolling-end",
    "2022-06-30",
    "--universe",
    "TSLA,MSFT",
    "--repeats",
    "1",
    "--episodes",
    "1",
    "--ablations",
    "full",
]
ROLLING_WINDOWS = 4


def rolling(out: Path, extra: list[str]) -> float:
    cmd = [
        sys.executable,
        "-m",
        "fincon.cli.main",
        "experiment",
        "--brain",
        "rules",
        *ROLLING,
        "--no-progress",
        "--out",
        str(out),
        *extra,
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"bench/experiment.py --rolling: {' '.join(extra) or 'local'} failed: {proc.stderr.strip()}")
    return wall


def main_rolling() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-rolling-") as tmp:
        tmp = Path(tmp)
        runs = {
            "local (1 worker)": ([], tmp / "local"),
            "local, 2 workers": (["--workers", "2"], tmp / "local2"),
            "ray, 1 CPU": (["--executor", "ray", "--ray-cpus", "1"], tmp / "ray1"),
            "ray, 2 CPUs": (["--executor", "ray", "--ray-cpus", "2"], tmp / "ray2"),
        }
        walls = {name: rolling(out, extra) for name, (extra, out) in runs.items()}
        sums = {(out / "summary.csv").read_bytes() for _, out in runs.values()}
    print(
        f"fincon experiment --rolling 1m --step 1m, 2022-03..06 ({ROLLING_WINDOWS} windows), TSLA,MSFT, rules "
        "brain, 1 training episode, team + 4 baselines"
    )
    for name, wall in walls.items():
        print(f"  {name:18s} {wall:7.1f} s  {ROLLING_WINDOWS / wall * 60:6.2f} windows/min")
    base = walls["local (1 worker)"]
    print(
        f"  ratio 1 worker / 2 workers {base / walls['local, 2 workers']:.2f}x, 1 worker / ray 2 CPUs "
        f"{base / walls['ray, 2 CPUs']:.2f}x; summary.csv identical: {len(sums) == 1}"
    )
    if len(sums) != 1:
        sys.exit("bench/experiment.py --rolling: the executors wrote different summary.csv")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--episodes", type=int, default=2)
    ap.add_argument("--cpus", type=int, default=2, help="local Ray cluster size (default 2)")
    ap.add_argument(
        "--ablations",
        default="full,no-cvar,no-beliefs",
        help="the team's variants (default all three; the smoke test: full)",
    )
    ap.add_argument("--rolling", action="store_true", help="time a small rolling evaluation instead (issue 22)")
    ap.add_argument(
        "--bootstrap-reps",
        type=int,
        help="the experiments' statistics (fincon experiment --bootstrap-reps; default: fincon's, as a user "
        "gets; the smoke test: 1,000)",
    )
    args = ap.parse_args()
    if args.rolling:
        return main_rolling()
    variants = len(args.ablations.split(","))
    units = 1 + 2 * variants * args.repeats  # baselines, then a training and a test per repeat and ablation
    with tempfile.TemporaryDirectory(prefix="bench-experiment-") as tmp:
        tmp = Path(tmp)
        reps = [] if args.bootstrap_reps is None else ["--bootstrap-reps", str(args.bootstrap_reps)]
        local = experiment(tmp / "local", args.repeats, args.episodes, args.ablations, reps)
        ray = experiment(
            tmp / "ray",
            args.repeats,
            args.episodes,
            args.ablations,
            [*reps, "--executor", "ray", "--ray-cpus", str(args.cpus)],
        )
        same = (tmp / "local" / "results.json").read_bytes() == (tmp / "ray" / "results.json").read_bytes()
        start_stop, per_unit = ray_fixed_costs(args.cpus, units)
    print(
        f"fincon experiment: TSLA, rules brain, {args.repeats} repeats x {variants} ablations x {args.episodes} episodes "
        f"({units} units), train 2022-04-01..04-29, test 2022-05-02..05-31"
    )
    print(f"  local (serial)         {local:7.1f} s")
    print(f"  ray, {args.cpus} CPUs            {ray:7.1f} s")
    verdict = "faster" if ray < local else "slower"
    print(f"  ratio local / ray      {local / ray:7.2f}x  (ray is {verdict}; results.json identical: {same})")
    print(
        f"  ray fixed costs: local cluster start + stop {start_stop:.1f} s; a fresh worker and fincon's imports "
        f"{per_unit:.2f} s per unit ({args.cpus} at a time)"
    )
    if not same:
        sys.exit("bench/experiment.py: the two executors wrote different results.json")


if __name__ == "__main__":
    os.environ["FINCON_LEDGER"] = "off"  # a bench's runs are no trials: kept out of the user's ledger
    main()
