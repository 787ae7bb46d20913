"""``fincon experiment``: train, test, ablations and baselines in one command (the paper's protocol)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from fincon import data, workflow
from fincon.agents.team.params import FinConParams
from fincon.cli.args import ledger_env, ledger_path
from fincon.cli.broker_flags import add_broker, broker_overrides, check_broker_flags
from fincon.cli.flags import add, given, names
from fincon.cli.llm import add_llm_arguments, llm_overrides
from fincon.cli.options import (
    TRANSCRIPTS,
    RunArgs,
    add_data,
    add_team,
    data_overrides,
    flag_of,
    params_beside,
    team_values,
)
from fincon.config import WHAT, name_flags
from fincon.errors import ConfigError
from fincon.files import json_text
from fincon.flag import Flag
from fincon.llm.settings import LLMSettings
from fincon.report import text
from fincon.workflow.executors import open_executor
from fincon.workflow.experiment_config import ExperimentConfig

#: experiment config key -> the flag that sets it (errors name what the user typed)
FLAGS = {
    **names(ExperimentConfig),
    **names(FinConParams, under="team."),
    **names(LLMSettings, under="llm.", prefix="--llm-"),  # llm.seed is --llm-seed, not the experiment's --seed
}

HELP = (
    """\
Run the FinCon paper's protocol for one ticker (or a portfolio):

  for each repeat r = 1..R and each ablation (full, no-cvar, no-beliefs):
    train the team's beliefs over K episodes on the training window
      (`fincon train`; no-beliefs: the episodes run, the beliefs never move;
      no-cvar: the within-episode CVaR alert is off in training and test)
    test the learned beliefs on the test window (`fincon backtest --beliefs`)
  run the baselines once on the test window (they are deterministic)

Repeats differ by their seed: the rules brain's exploration noise; with the
llm brain, the manager's sampling seed in training episodes 2..K and in the
test run, at --temperature (above 0; the analysts keep the run's sampling,
so unchanged inputs are LLM cache hits). Each ablation is reported by its median run (by CR on the test
window; with an even R, the lower of the two middle runs), as the paper
does. The table shows CR %, Sharpe and MDD % on the test window, and the
p-value of a two-sided Wilcoxon signed-rank test of the median run's daily
log returns against the best baseline (by Sharpe; marked *).

Writes an experiment directory: experiment.json (config, status),
results.json (every run's metrics, the medians, the tests), equity.png (the
median runs and the baselines), beliefs.png and beliefs.md (beliefs, tau and
objective per episode of the full ablation's median repeat), and the units:
train/<ablation>-r<k>, test/<ablation>-r<k>, baselines/.

Interrupted? Run the same command again: finished units are skipped, a
half-finished training resumes after its last episode, and the results are
the same. Both windows' prices, the event corpus over both windows and the
baselines' parameters are checked before the directory is created; an
experiment that fails later says why in experiment.json (status failed,
stopped_early or interrupted), and report, plot and explain show it. A YAML config (--config) describes the whole experiment; flags
override it (see examples/experiment.yaml). Windows default to the paper's:
train 2022-01-03 .. 2022-10-04, test 2022-10-05 .. 2023-06-09.

Cost: R x (number of ablations) trainings of K episodes plus as many test
runs; with the llm brain and the defaults (5 x 3 x (4 + 1) = 75 runs of the
team) this takes long on a CPU: try --brain rules or --repeats 1 first.

Scale-out: the units of a phase (the trainings and the baselines, then the
test runs) are independent. --executor ray runs each one as a Ray task (a
worker process runs up to 8 units in turn), N at a time on a local Ray
cluster (--ray-cpus N, default every core; loopback only) or across an
existing cluster (--ray-address auto: this machine must be one of its nodes, and the
experiment directory and data must be on a filesystem every node mounts at
the same path). The files are the same as with --executor local, and either
executor resumes the other's experiment. The LLM cache stays on this
machine: workers read and write it through a Ray actor here (SQLite is not
safe on a network filesystem). A unit that fails does not stop the others:
the phase ends, then one line names it. Each worker loads its own model (llm
brain, local backend): mind the memory. A local cluster keeps Ray's logs and
sockets in a fincon-ray-* directory of the temp folder ($TMPDIR, else /tmp),
deleted when it stops, and its auth token in the environment: nothing is left in
/tmp/ray or ~/.ray. The config's executor: key takes the same choice
(executor: ray). Needs pip install 'fincon[ray]'.

Exit status: 0 done; 2 bad input; 3 a unit stopped early (LLM gone, budget
spent: rerun to resume); 1 a unit failed on a Ray worker (an error that is
not bad input, or the worker died: rerun to resume), or another command is
running in the same --out; 143 terminated by SIGTERM.

"""
    + TRANSCRIPTS
)

EXAMPLES = """\
examples:
  fincon experiment --ticker TSLA --brain rules                       # minutes
  fincon experiment --ticker TSLA --repeats 5 --episodes 4           # the paper's protocol, bundled LLM
  fincon experiment --tickers TSLA,MSFT,PFE --brain rules --ablations full,no-cvar
  fincon experiment --ticker TSLA --brain rules --protocols fincon,scm,debate --ablations full
  fincon experiment --config examples/experiment.yaml --repeats 3
  fincon experiment --preset investorbench --data DIR                 # an imported InvestorBench asset
  fincon experiment --preset fincon-paper --workers 2                 # the paper's two tables, rules brain
  fincon experiment --ticker TSLA --brain rules --executor ray --ray-cpus 8   # 8 units at a time
  fincon experiment --config examples/experiment.yaml --executor ray --ray-address auto   # a running cluster
  fincon experiment --ticker TSLA --brain rules --train-start 2022-03-01 --train-end 2022-05-31 \\
      --test-start 2022-06-01 --test-end 2022-08-31 --repeats 2 --episodes 2
"""


#: the team flags experiment has (FinConParams' fields)
TEAM_FLAGS = ("brain", "events")
#: the experiment's flags (ExperimentConfig's fields), by where they are in --help
WHAT_KEYS = ("tickers", "train.start", "train.end", "test.start", "test.end", "repeats", "episodes", "ablations",
             "placebos", "protocols", "baselines")  # fmt: skip
TEAM_KEYS = ("seed", "temperature", "explore", "lr")
ROLLING_KEYS = ("rolling.window", "rolling.step", "rolling.universes", "rolling.start", "rolling.end")
EXECUTOR_KEYS = ("executor.kind", "executor.workers", "executor.address", "executor.cpus")


#: what experiment's own flags say
OWN_HELPS = {
    "config": "YAML experiment config (examples/experiment.yaml); flags override it",
    "param": "fincon.KEY=VALUE: a team parameter; markowitz.KEY=VALUE etc.: a baseline's; repeatable",
    "out": "experiment directory (default runs/experiment_<tickers>_<hash>); the same command resumes it",
    "as_json": "print results.json instead of the table",
}


class ExperimentArgs(RunArgs):
    """``fincon experiment``'s own flags (what experiment.yaml does not hold)."""

    preset: Annotated[
        Literal["investorbench", "fincon-paper"] | None,
        Flag(
            help="a public benchmark's protocol: windows, repeats, rules brain and baselines (flags win); "
            "investorbench: warm-up 2020-07-02..09-30, test 2020-10-01..2021-05-06, 5 repeats, "
            "buy-and-hold and sentiment baselines; fincon-paper: the FinCon paper's Tables 2 and 3 (8 stocks "
            "against finsent, finmem, a2c, ppo, dqn and buy-and-hold; 2 portfolios against equal-weight, "
            "markowitz and finrl-a2c; 5 repeats), printed beside the paper's published figures",
            group=WHAT,
        ),
    ] = None


COMMAND = "experiment"
SUMMARY = "the paper's protocol: repeats x ablations, baselines, Wilcoxon test"


def register(p: argparse.ArgumentParser) -> None:
    add(p, ExperimentArgs, "config", "preset", helps=OWN_HELPS)
    add(p, ExperimentConfig, *WHAT_KEYS)
    add(p, ExperimentArgs, "param", helps=OWN_HELPS)
    add_team(p, *TEAM_FLAGS)
    add(p, ExperimentConfig, *TEAM_KEYS, *ROLLING_KEYS)
    add_data(p)
    add_broker(p)  # the backtest's cost, cap and fill flags: every unit runs with them
    add_llm_arguments(p, with_cutoff_gate=True, with_masking=True)
    add(p, ExperimentConfig, *EXECUTOR_KEYS, "bootstrap_reps")
    add(p, ExperimentArgs, "ledger", "out", "as_json", "no_progress", helps=OWN_HELPS)
    p.set_defaults(func=run)


def experiment_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The flags as dotted config keys (only those given), checked against each other."""

    over: dict[str, Any] = given(args, ExperimentConfig, *WHAT_KEYS, *TEAM_KEYS, *ROLLING_KEYS, *EXECUTOR_KEYS,
                                 "bootstrap_reps")  # fmt: skip
    team = team_values(args, *TEAM_FLAGS)
    over.update({f"team.{key}": value for key, value in team.items()})
    over.update({k: v for k, v in data_overrides(args).items() if v is not None})
    over.update({k: v for k, v in broker_overrides(args).items() if v is not None})
    if "rolling.window" in over:
        split_given = [k for k in ("train.start", "train.end", "test.start", "test.end") if k in over]
        if split_given:
            raise ConfigError(
                f"{FLAGS[split_given[0]]} sets the one train/test split; --rolling makes its own windows "
                "(--rolling-start, --rolling-end, --step): drop one of them"
            )
        if "tickers" in over:  # the windows' tickers are the universes' (say so, not ignore the flag)
            rule = ",".join(over["tickers"]) if isinstance(over["tickers"], list) else over["tickers"]
            raise ConfigError(
                f"--ticker picks the one split's tickers; --rolling picks each window's with --universe RULE: "
                f"give --universe {rule} for these tickers in every window"
            )
        if getattr(args, "preset", None):
            raise ConfigError(
                f"--preset {args.preset} is one train/test split with its own windows; --rolling would drop "
                "them: drop --preset or --rolling"
            )
    for key, value in llm_overrides(args).items():
        over[f"llm.{key}"] = value
    for name, params in params_beside(team, args.param).items():
        for key, value in params.items():
            over[f"team.{key}" if name == "fincon" else f"strategy_params.{name}.{key}"] = value
    rolling_only = [FLAGS[k] for k in ROLLING_KEYS[1:] if k in over]
    if rolling_only and "rolling.window" not in over:
        if not (args.config and isinstance(workflow.read_yaml(args.config).get("rolling"), dict)):
            raise ConfigError(
                f"{rolling_only[0]} is a setting of the rolling evaluation; add --rolling WINDOW (e.g. 1y)"
            )
    return over


def build_experiment(args: argparse.Namespace):
    """The experiment the flags (and --config, --preset) describe, validated."""

    over = experiment_overrides(args)
    preset = getattr(args, "preset", None)
    if preset == "fincon-paper":
        raise ConfigError("--preset fincon-paper is several experiments: build_paper builds them")
    manifest = _dataset_manifest(args) if preset else None
    if manifest is not None and not over.get("tickers"):  # a dataset names its tickers
        over["tickers"] = list(manifest.tickers)

    exp = _load(args, workflow.preset_overrides(preset, over), _flag_names(over))
    check_broker_flags(args, exp.broker)
    return exp


def _dataset_manifest(args: argparse.Namespace):
    """The manifest of ``--data DIR`` (None without --data or for a plain price folder)."""
    if args.data is None:
        return None

    ds = data.open_inputs("csv", args.data).dataset
    return ds.manifest if ds is not None else None


def _flag_names(over: dict[str, Any]) -> dict[str, str]:
    """config key -> the flag that set it (for errors in the user's words)."""
    return {key: flag_of(key, FLAGS) for key in over}


def _load(args: argparse.Namespace, over: dict[str, Any], flags: dict[str, str]):
    try:
        return workflow.load_experiment(args.config, over)
    except ConfigError as exc:  # the flag the user typed, not the config key behind it
        raise ConfigError(name_flags(str(exc), flags)) from None


def build_paper(args: argparse.Namespace) -> list[tuple[Any, ExperimentConfig]]:
    """``--preset fincon-paper``: the protocol's blocks, each a validated experiment."""

    over = experiment_overrides(args)
    manifest = _dataset_manifest(args)
    blocks = workflow.plan(
        over,
        list(manifest.tickers) if manifest is not None else None,
        (manifest.start, manifest.end) if manifest is not None else None,
    )
    flags = _flag_names(over)
    return [(b, _load(args, b.overrides, flags)) for b in blocks]


def run(args: argparse.Namespace) -> int:
    with ledger_env(args):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    if getattr(args, "preset", None) == "fincon-paper":
        return run_paper_command(args)
    exp = build_experiment(args)
    if exp.rolling is not None:
        return run_rolling_command(args, exp)
    report = _execute(args, exp.executor, workflow.run_experiment, exp, Path(args.out) if args.out else None)
    if args.json:
        print(json_text({"experiment_dir": str(report.out), "ran": report.ran, **report.results}, None), end="")
        return 0
    print(text.format_results(report.results, _family(args, report.results)))
    if getattr(args, "preset", None):
        print(workflow.NOTES[args.preset])
    _resumed(report)
    print(f"\nexperiment directory: {report.out}")
    print(f"results:              {report.out / 'results.json'}")
    print(f"equity curves:        {report.out / 'equity.png'}")
    print(f"belief evolution:     {report.out / 'beliefs.png'}, {report.out / 'beliefs.md'}")
    sys.stdout.flush()
    return 0


def _family(args: argparse.Namespace, results: dict[str, Any]):
    """The trial ledger's family of the experiment's test window (None: --ledger off)."""

    path = ledger_path(args)
    if path is None:
        return None
    return workflow.trials.family(path, results["tickers"], results["test"]["start"], results["test"]["end"])


def run_paper_command(args: argparse.Namespace) -> int:
    """``--preset fincon-paper``: every block's experiment, then the two tables beside the paper's."""

    experiments = build_paper(args)
    out = Path(args.out) if args.out else workflow.paper_protocol.default_out(experiments)
    report = _execute(args, experiments[0][1].executor, workflow.run_paper, experiments, out)
    if args.json:
        print(json_text({"paper_dir": str(out), "ran": report.ran, "blocks": report.rows}, None), end="")
        return 0
    print(report.text)
    _resumed(report)
    print(f"\npaper directory: {out}  (paper.md the tables, paper.json the figures, one experiment per block)")
    sys.stdout.flush()
    return 0


def _resumed(report: Any) -> None:
    if report.skipped:
        print(f"\nresumed: {len(report.skipped)} unit(s) were already finished, {len(report.ran)} run now")


def _execute(args: argparse.Namespace, spec, run, what, out: Path | None):
    """``run(what, out)`` on the executor ``spec`` names, with the command's progress and cutoff flags."""

    with open_executor(spec) as executor:
        return run(what, out, progress=not args.no_progress, executor=executor,
                   require_after_cutoff=args.require_after_cutoff)  # fmt: skip


def run_rolling_command(args: argparse.Namespace, exp) -> int:
    out = Path(args.out) if args.out else workflow.rolling.default_out(exp)
    report = _execute(args, exp.executor, workflow.run_rolling, exp, out)
    if args.json:
        print(json_text({"rolling_dir": str(report.out), "ran": report.ran, **report.results}, None), end="")
        return 0
    print(text.format_rolling(report.results))
    _resumed(report)
    print(
        f"\nrolling directory: {report.out}  (windows.csv, summary.csv, results.json; "
        f"fincon report {report.out} --out rolling.html)"
    )
    sys.stdout.flush()
    return 0
