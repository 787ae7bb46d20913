"""``fincon train``: learn the team's investment beliefs over K episodes (CVRF)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from fincon import data as fincon_data, workflow
from fincon.cli.args import ledger_env
from fincon.cli.flags import add, given
from fincon.cli.llm import add_llm_arguments, llm_overrides
from fincon.cli.options import (
    TRANSCRIPTS,
    RunArgs,
    add_data,
    add_team,
    check_data_flags,
    data_overrides,
    load_run_config,
    parse_params,
    team_values,
)
from fincon.config import WHAT, RunConfig, read_yaml
from fincon.errors import ConfigError
from fincon.files import json_text
from fincon.flag import Flag, spelled
from fincon.workflow.experiment_config import ExperimentConfig

TRAIN_START, TRAIN_END = "2022-01-03", "2022-10-04"
TRAINING = "training"
#: what train's output flags say
OUTPUT_HELPS = {
    "out": "training directory (default runs/train_<tickers>_<window>_<hash>); the same command resumes it",
    "as_json": "print the episodes as JSON instead of a table",
}

HELP = (
    f"""\
Train the agent team's investment beliefs (FinCon's CVRF, Algorithm 1): run
the team K times over the training window; after each episode from the
second on, the risk-control agent compares it with the previous one (the
objective, their sustained profitable and losing stretches, conceptual
insights), tau = the share of days both took the same action, and the
beliefs take one step with learning rate 1 - tau (the more the episodes
agree, the smaller the edit). Only the perspectives an update touches reach
their agents. CVaR alerts work inside every episode (--no-cvar: off).

Writes a training directory: episodes/ep-NN (normal run dirs), episodes.jsonl
(objective, tau, insights, meta-prompt, edits per episode), beliefs.json (the
learned beliefs + the last episode's reflections) and beliefs.png. Test them
on the next window with `fincon backtest ... --beliefs RUN`.

Interrupted? Run the same command again: it resumes after the last finished
episode and ends with the same files. An episode counts as finished only
when it covered its whole window: one that stopped early (LLM gone, budget
spent) is run again from its first day, and the summary says so.

Every input (window, prices, event corpus, beliefs, --out) is checked
before the directory is created. A training that fails later says why in
train.json (status failed, stopped_early or interrupted, and the error);
report, plot and explain show that mark, and the same command resumes. A
rerun with another config into the same --out is refused once an episode
finished; leftovers of a training that finished nothing are replaced.

Window default: {TRAIN_START} .. {TRAIN_END} (also under --config, for
what the config leaves out; the paper's training window; the sample corpus covers 2022-01-03 .. 2023-06-09).

Exit status: 0 done; 2 bad input; 3 an episode stopped early (LLM gone,
budget spent: rerun to resume); 1 another command is running in the same
--out; 143 terminated by SIGTERM.

"""
    + TRANSCRIPTS
)

EXAMPLES = """\
examples:
  fincon train --ticker TSLA --brain rules --episodes 4
  fincon train --ticker TSLA --start 2022-01-03 --end 2022-10-04 --episodes 4          # bundled LLM
  fincon train --ticker TSLA --brain rules --events runs/events-planted --out runs/train-planted
  fincon backtest --ticker TSLA --strategy fincon --brain rules --beliefs runs/train-planted
"""


#: the team flags train has (FinConParams' fields)
TEAM_FLAGS = ("brain", "events", "candidates", "cvar")


class TrainArgs(RunArgs):
    """``fincon train``'s own flags (the window, knobs and team are the run's and the experiment's fields)."""

    start: Annotated[
        dt.date | None,
        Flag(help=f"first training day, YYYY-MM-DD (default: the config's start, else {TRAIN_START})", group=WHAT),
    ] = None
    end: Annotated[
        dt.date | None,
        Flag(help=f"last training day, YYYY-MM-DD (default: the config's end, else {TRAIN_END})", group=WHAT),
    ] = None
    no_beliefs: Annotated[
        bool, Flag(help="the ablation: run the episodes but never update the beliefs", group=TRAINING)
    ] = False
    cvrf_brain: Annotated[
        Literal["team", "llm"],
        Flag(
            help="who writes the belief update: the team's brain (default), or llm: the model compares the "
            "episodes and edits the beliefs text even when the episodes run on the rules brain (cheap "
            "episodes, verbal beliefs; the --llm-* flags pick the model)",
            group=TRAINING,
        ),
    ] = "team"


COMMAND = "train"
SUMMARY = "learn the team's investment beliefs over training episodes (CVRF)"


def register(p: argparse.ArgumentParser) -> None:
    add(p, TrainArgs, "config", helps={"config": "YAML run config (strategies: [fincon]); flags override it"})
    add(p, RunConfig, "tickers")
    add(p, TrainArgs, "start", "end")
    add(
        p,
        TrainArgs,
        "param",
        helps={"param": {"metavar": "fincon.KEY=VALUE", "help": "team parameter, repeatable (value parsed as YAML)"}},
    )
    add_data(p)
    add_team(p, *TEAM_FLAGS)
    add(p, ExperimentConfig, "episodes", fill=True)
    add(p, TrainArgs, "no_beliefs")
    add(p, ExperimentConfig, "explore", fill=False)  # None when not given: a warning names one the brain ignores
    add(p, ExperimentConfig, "lr", fill=True)
    add(p, TrainArgs, "cvrf_brain")
    add_llm_arguments(p, with_cutoff_gate=True, with_masking=True)
    add(p, TrainArgs, "ledger", "out", "as_json", "no_progress", helps=OUTPUT_HELPS)
    p.set_defaults(func=run)


def build_config(args: argparse.Namespace):
    """The training's run config: the team alone, without a benchmark, on the
    training window (its defaults apply to whatever neither a flag nor the
    config gives: a config without dates must not train on the test window)."""
    other = sorted(set(parse_params(args.param or [])) - {"fincon"})
    if other:  # a training runs the team alone: there is no --strategy to add them to
        raise ConfigError(
            f"--param {other[0]}.KEY: fincon train trains the agent team alone; its --param is fincon.KEY=VALUE"
        )
    said = _config(args.config) if args.config is not None else {}
    in_config = set(said)
    if said:  # replaced unsaid: the training ran the team alone
        keys = [k for k in ("strategies", "benchmark") if k in said and said[k] not in (["fincon"], False)]
        if keys:
            print(
                f"fincon: warning: {args.config}: {' and '.join(f'{k}: {said[k]}' for k in keys)} "
                f"{'are' if len(keys) > 1 else 'is'} the backtest's; fincon train runs the team alone, without "
                "a benchmark",
                file=sys.stderr,
            )
    flags = {
        "tickers": given(args, RunConfig, "tickers").get("tickers"),
        "start": args.start or (None if "start" in in_config else TRAIN_START),
        "end": args.end or (None if "end" in in_config else TRAIN_END),
        **data_overrides(args),
    }
    cfg = load_run_config(
        args.config,
        flags,
        team=team_values(args, *TEAM_FLAGS),
        params=args.param,
        llm=llm_overrides(args),
        fixed={"strategies": ["fincon"], "benchmark": False},
    )
    check_data_flags(args, cfg.data)
    return cfg


def run(args: argparse.Namespace) -> int:
    cfg = build_config(args)
    opts = workflow.TrainOptions(
        episodes=args.episodes,
        learn=not args.no_beliefs,
        explore=workflow.TrainOptions.explore if args.explore is None else args.explore,
        lr=args.lr,
        cvrf_brain=args.cvrf_brain,
    )
    _said_options(args.config, opts)
    with ledger_env(args):  # each episode is a trial on the training window, counted there
        report = workflow.train(
            cfg,
            Path(args.out) if args.out else None,
            opts,
            progress=not args.no_progress,
            require_after_cutoff=args.require_after_cutoff,
            given=["explore"] if args.explore is not None else [],
        )
    if args.json:
        out = {
            "train_dir": str(report.out),
            "episodes": report.rows,
            "rerun": {str(k): v for k, v in sorted(report.rerun.items())},
            "beliefs": report.beliefs.model_dump(),
        }
        print(json_text(out, None), end="")
        return 0
    print(format_episodes(report.rows))
    for k, why in sorted(report.rerun.items()):
        print(f"\nrerun: episode {k} had {why}; it was run again from its first day")
    if report.resumed_from:
        print(f"\nresumed: episodes 1..{report.resumed_from} were already finished")
    print(f"\ntraining directory: {report.out}")
    unmoved = (
        ""
        if report.beliefs.version
        else (
            ": the initial ones; one episode never moves them, CVRF compares two: --episodes 2 or more"
            if len(report.rows) < 2
            else ": the initial ones, no update ran"
        )
    )
    print(f"learned beliefs:    {report.out / 'beliefs.json'}  (version {report.beliefs.version}{unmoved})")
    print(f"belief evolution:   {report.out / 'beliefs.png'}")
    print(f"test them:          {next_command(cfg, report.out)}")
    return 0


#: a training's options as its flags give them (train.json's "options")
_OPTION_FLAGS = {"episodes": "--episodes", "explore": "--explore", "lr": "--lr", "cvrf_brain": "--cvrf-brain"}


def _said_options(config: Path | None, opts) -> None:
    """A training's own config.yaml given to ``--config`` holds its episodes' run config, not its options
    (train.json beside it does): rerun with other options, it trained something else without a word
    (found in review: 4 episodes for 2, other beliefs). The options that differ are said."""
    beside = Path(config).parent / "train.json" if config is not None else None
    if beside is None or not beside.is_file():
        return
    try:
        ran = json.loads(beside.read_text(encoding="utf-8")).get("options") or {}
    except (OSError, ValueError):
        return
    now = dataclasses.asdict(opts)
    differ = [f"{flag} {ran[k]}" for k, flag in _OPTION_FLAGS.items() if k in ran and ran[k] != now[k]]
    if ran.get("learn") is False and now["learn"]:
        differ.append("--no-beliefs")
    if differ:
        print(
            f"fincon: warning: {config} is the config of a training that ran {' '.join(differ)} ({beside}); "
            "this one runs otherwise: give those flags to train it again",
            file=sys.stderr,
        )


#: the LLM settings that say which model the team asks and what it is shown:
#: a test of the beliefs with another model (or unmasked) is another experiment
SAME_MODEL = ("backend", "model", "base_url", "api_key_env", "knowledge_cutoff", "anonymize", "paraphrase_model")


def next_command(cfg, train_dir: Path) -> str:
    """The backtest that tests the learned beliefs, with the brain, model,
    team settings, data and corpus the training used (copying it must not
    switch a rules training's test to the live model, a served model's to
    the bundled one, a two-analyst team's to seven, nor the data to the
    bundled sample)."""
    import shlex

    team = cfg.params("fincon")
    parts = ["fincon", "backtest", "--ticker", ",".join(cfg.tickers), "--strategy", "fincon"]
    if team.get("brain", "llm") != "llm":
        parts += ["--brain", str(team["brain"])]
    else:
        for name in (k for k in SAME_MODEL if k in cfg.llm.model_fields_set):
            flag = spelled(type(cfg.llm), name, "--llm-")
            value = getattr(cfg.llm, name)
            parts += [flag] if value is True else [] if value is False else [flag, str(value)]
        parts += [f"--alias={t}={n}" for t, names in sorted(cfg.llm.aliases.items()) for n in names]
    for key, value in sorted(team.items()):
        if key not in ("brain", "events", "beliefs"):
            parts += ["--param", f"fincon.{key}={value if isinstance(value, str) else json.dumps(value)}"]
    if cfg.data.dir is not None:
        parts += ["--data", str(cfg.data.dir)]
    if team.get("events") not in (None, "sample") and not (
        cfg.data.dir is not None and str(team["events"]).startswith(str(cfg.data.dir))
    ):
        parts += ["--events", str(team["events"])]
    # the test window: from the day after the training's last (a test on days the beliefs learned from
    # is refused), to the backtest's default end, or a dataset's last day
    fields = type(cfg).model_fields
    start, end = cfg.end + dt.timedelta(days=1), fields["end"].default
    dataset = fincon_data.resolve_dataset(cfg.data.dir) if cfg.data.dir is not None else None
    if dataset is not None:
        end = dataset.manifest.end
    if start > end:
        return f"no prices after the training's last day ({cfg.end}) to test on: give later ones with --beliefs {train_dir}"
    parts += ["--start", str(start)] if start != fields["start"].default else []
    parts += ["--end", str(end)] if end != fields["end"].default else []
    parts += ["--beliefs", str(train_dir)]
    return shlex.join(parts)


def _config(path: Path) -> dict[str, Any]:
    """The YAML config's top level (empty when it cannot be read: the config
    loader then reports why, in one line)."""

    try:
        return dict(read_yaml(path))
    except ConfigError:
        return {}


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def format_episodes(rows: list[dict]) -> str:
    head = (
        f"{'episode':>7}  {'objective %':>11}  {'Sharpe':>7}  {'MDD %':>7}  {'alerts':>6}  {'tau':>5}  "
        f"{'edit':>6}  touched"
    )
    lines = [head]
    for r in rows:
        upd = r.get("update") or {}
        size = (upd.get("weights") or {}).get("size")
        tau = r.get("tau")
        lines.append(
            # an episode too short for a Sharpe has none (null in episodes.jsonl): n/a, never 0.000
            f"{r['episode']:>7}  {r['objective']:>11.3f}  {_num(r.get('sharpe')):>7}  "
            f"{_num(r.get('mdd_pct')):>7}  {r.get('alerts', 0):>6}  "
            f"{'-' if tau is None else f'{tau:.2f}':>5}  {'-' if size is None else f'{size:.3f}':>6}  "
            f"{', '.join(upd.get('touched', [])) or '-'}"
        )
    return "\n".join(lines)
