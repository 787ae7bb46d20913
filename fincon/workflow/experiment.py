"""``fincon experiment``: the paper's protocol in one command.

For every repeat r = 1..R and every ablation (``full``, ``no-cvar``,
``no-beliefs``) the team is trained on the training window (``fincon
train``: K episodes with CVRF between them) and then tested on the test
window with the learned beliefs. The baselines run once on the test window
(they are deterministic). Repeats differ by their seed: the rules brain's
exploration noise (``TrainOptions.seed``); with the llm brain, the manager's
sampling seed in the exploring episodes and in the test run, at a
temperature above 0 (the analysts keep the run's sampling, so their
unchanged inputs are answered by the LLM cache). As in the paper, each ablation is reported by its median run (by CR on
the test window; with an even number of repeats, the lower of the two
middle runs), and the daily log returns of that run are compared with the
best baseline (by Sharpe on the test window) with a two-sided Wilcoxon
signed-rank test.

The experiment directory::

    experiment.json          the config, status (running / complete)
    results.json             every unit's test metrics, the median runs, the tests
    equity.png               the median runs and the baselines on the test window
    beliefs.png, beliefs.md  belief evolution of the full ablation's median repeat
    train/<ablation>-r<k>/   a `fincon train` directory (resumable on its own)
    test/<ablation>-r<k>/    a `fincon backtest` run directory of the team
    baselines/               one run directory per baseline

Resumable: a unit is done once its directory is complete (train.json status
complete; a test or baseline run dir whose metrics say complete). Running
the same command again skips done units, resumes a half-finished training
after its last finished episode, and ends with the same results.json.

Units of one phase are independent: :func:`serial` runs them one by one,
:class:`~fincon.workflow.ray_executor.RayExecutor` as Ray tasks in parallel
(``--executor ray``; see :mod:`fincon.workflow.executors`). Both write the
same files.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fincon import workflow
from fincon.agents.team.factory import TEAM_LLM
from fincon.config import _set_path, read_yaml
from fincon.engine.record import METRICS
from fincon.engine.rundir import check_out_path
from fincon.errors import ConfigError

# the split modules' public names, importable from here as before
from fincon.files import json_text, write_atomic
from fincon.llm.endpoint import check_server
from fincon.llm.knowledge import model_knowledge
from fincon.llm.settings import build_client, layered
from fincon.strategies.registry import make_strategy
from fincon.validation import format_validation_error
from fincon.workflow.executors import Executor, serial
from fincon.workflow.experiment_config import TEAM, TEST_WINDOW, TRAIN_WINDOW, ExperimentConfig
from fincon.workflow.experiment_results import collect, placebo_results, plot_experiment
from fincon.workflow.experiment_units import (
    Job,
    Unit,
    _run_config,
    _status,
    _team,
    baseline_config,
    configured_llm,
    placebo_dir,
    train_config,
    train_options,
    unit_done,
)
from fincon.workflow.model_checks import check_knowledge, knowledge, warn_other_brain, warn_vacuous
from fincon.workflow.placebo import ToneRewriter, write_placebo
from fincon.workflow.provenance import planted_line
from fincon.workflow.runner import inputs_for
from fincon.workflow.status import default_dir
from fincon.workflow.study import Study, inputs_state, run_phases
from fincon.workflow.training import _model_settings


def load_experiment(path: Path | None = None, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
    """Read ``path`` (YAML), apply dotted ``overrides`` (None: not given) and validate."""
    tree = read_yaml(path) if path is not None else {}
    if isinstance(tree.get("executor"), str):  # executor: ray is short for executor: {kind: ray}
        tree["executor"] = {"kind": tree["executor"]}
    for key, value in (overrides or {}).items():
        if value is not None:
            _set_path(tree, key, value)
    if isinstance(tree.get("rolling"), dict):  # its windows and universes replace these: refused, not ignored
        split = [key for key in ("tickers", "train", "test") if key in tree]
        if split:
            raise ConfigError(
                f"experiment config: {split[0]} belongs to one train/test split; a rolling evaluation makes its own "
                "windows (rolling.start, rolling.end, rolling.step) and picks their tickers by rolling.universes "
                "(e.g. [TSLA]): drop it"
            )
    for name, (start, end) in (("train", TRAIN_WINDOW), ("test", TEST_WINDOW)):
        if isinstance(tree.get(name), dict):  # a window given in part: the other end is the paper's
            tree[name] = {"start": start, "end": end, **tree[name]}
    try:
        cfg = ExperimentConfig(**tree)
    except ValidationError as exc:
        raise ConfigError("experiment config: " + format_validation_error("", exc, ExperimentConfig)) from None
    # the run-level checks (llm section, data) on the configs the units will run
    train_config(cfg, "full", 1)
    baseline_config(cfg)
    return cfg


@dataclass
class ExperimentReport:
    out: Path
    results: dict[str, Any]
    ran: list[str] = field(default_factory=list)  # units run by this command (the rest were done)
    skipped: list[str] = field(default_factory=list)


def default_out(exp: ExperimentConfig, root: Path = Path("runs")) -> Path:
    return default_dir(f"experiment_{'-'.join(exp.tickers)[:60]}", exp.model_dump(mode="json"), root)


def units(exp: ExperimentConfig) -> tuple[list[Unit], list[Unit]]:
    """The two phases: (baselines and trainings), then the test runs."""
    combos = [(p, a) for p in exp.protocols for a in exp.ablations]
    first = [Unit("baselines")] + [Unit("train", a, r, p) for r in range(1, exp.repeats + 1) for p, a in combos]
    second = [Unit("test", a, r, p) for r in range(1, exp.repeats + 1) for p, a in combos]
    second += [Unit("test", f"placebo-{k}", r) for r in range(1, exp.repeats + 1) for k in exp.placebos or ()]
    return first, second


def run_experiment(
    exp: ExperimentConfig,
    out: Path | None = None,
    *,
    progress: bool = True,
    executor: Executor = serial,
    require_after_cutoff: bool = False,
    warn_knowledge: bool = True,
) -> ExperimentReport:
    """Run (or resume) the experiment; see the module docstring. Windows the
    team's model may remember are said once (refused with ``require_after_cutoff``)."""

    out = check_out_path(out) if out is not None else default_out(exp)
    span = (exp.train.start, exp.test.end)
    fingerprint = partial(
        inputs_state, inputs_for(exp), exp.tickers, span, exp.team.events, every_item=exp.llm.anonymize
    )
    study = Study(
        out,
        "experiment.json",
        {"config": exp.model_dump(mode="json"), "inputs": fingerprint()},
        "experiment",
        finished=_finished_units,
        layout=EXPERIMENT_LAYOUT,
        disposable=_nothing_kept,
        early=EXPERIMENT_EARLY,
        inputs_now=fingerprint,
    )

    def checks() -> None:  # every check before the first file: both windows' data, the corpus, the baselines
        gaps = check_inputs(exp)
        if gaps and warn_knowledge:
            print(f"fincon: warning: {gaps}", file=sys.stderr)
        blocks = experiment_knowledge(exp)
        check_knowledge({**blocks, **baseline_knowledge(exp)}, require=require_after_cutoff, warn=warn_knowledge)
        settings_said(exp, blocks, require_after_cutoff, warn_knowledge)

    return study.run(lambda: _run(exp, out, progress, executor), preflight=checks)


def settings_said(
    exp: ExperimentConfig, blocks: dict[str, Any], require: bool, warn: bool = True, given: Any = None
) -> None:
    """What an experiment (and each window of a rolling evaluation: it said none of it, found in review)
    says of its settings before its folder exists: those that change nothing, the other brain's (of
    ``given``, the fields the user set: ``exp``'s own by default), and a model server that is down (refused)."""
    if warn:
        also = ["--charge-llm"] if exp.broker.charge_llm else []  # as a backtest says it (it went unsaid here)
        warn_vacuous(exp.llm, require, calls_a_model(exp, blocks), also=also)
        warn_other_brain(exp.brain, exp.model_fields_set if given is None else given)
        warn_overridden_temperature(exp)
        warn_one_episode(exp)
        if planted := planted_line(exp.team.events, exp.tickers):  # the team's corpus, once
            print(f"fincon: warning: {planted}", file=sys.stderr)
    check_servers(exp, blocks)  # a server that is down: said now, before the experiment's folder


def warn_one_episode(exp: ExperimentConfig) -> None:
    """CVRF moves the beliefs between two episodes: a training of one never moves them, and the
    no-beliefs ablation is then the full team run again (a table showed the two rows identical, unsaid)."""
    if exp.episodes < 2 and {"full", "no-beliefs"} <= set(exp.ablations):
        print(
            "fincon: warning: --episodes 1: the beliefs move only between two episodes, so no training here "
            "moves them and no-beliefs is the full team run again (give --episodes 2 or more)",
            file=sys.stderr,
        )


def warn_overridden_temperature(exp: ExperimentConfig) -> None:
    """A ``--temperature`` given beside a configured LLM temperature above 0
    (``--llm-temperature``, the config's ``llm.temperature``) changes nothing:
    the configured one samples the manager. Said, never dropped in silence."""
    configured = float(configured_llm(exp).get("temperature") or 0)
    if exp.brain == "llm" and "temperature" in exp.model_fields_set and configured > 0:
        print(
            f"fincon: warning: --temperature {exp.temperature:g}: the manager samples at the configured LLM "
            f"temperature {configured:g} (--llm-temperature); --temperature changes nothing here",
            file=sys.stderr,
        )


def check_servers(exp: ExperimentConfig, blocks: dict[str, dict[str, Any]]) -> None:
    """Each model server the experiment's runs would call accepts connections (fincon.llm.endpoint)."""

    if blocks["test"]["label"] != "no-model":
        check_server(_model_settings(train_config(exp, "full", 1, exp.protocols[0]), train_options(exp, "full", 1)))
    if calls_a_model(exp, {}):
        check_server(exp.llm)


def calls_a_model(exp: ExperimentConfig, blocks: dict[str, dict[str, Any]]) -> bool:
    """Does any run of the experiment ask a model: the team, or a baseline with the llm brain?"""
    if any(b["label"] != "no-model" for b in blocks.values()):
        return True
    for b in exp.baselines:
        params = exp.strategy_params.get(b, {})  # a dict, or typed params (the paper preset's)
        brain = params.get("brain", "llm") if isinstance(params, dict) else getattr(params, "brain", "llm")
        if b == "llm-trader" or (b in ("finsent", "finmem") and brain == "llm"):
            return True
    return False


def experiment_knowledge(exp: ExperimentConfig) -> dict[str, dict[str, Any]]:
    """The team's training and test windows against its model's cutoff
    (label no-model on the rules brain): what results.json and the table show."""

    cfg = train_config(exp, "full", 1, exp.protocols[0])
    settings = _model_settings(cfg, train_options(exp, "full", 1))
    return {
        "training": model_knowledge(settings, exp.train.start, exp.train.end),
        "test": model_knowledge(settings, exp.test.start, exp.test.end),
    }


def baseline_knowledge(exp: ExperimentConfig) -> dict[str, dict[str, Any]]:
    """Each baseline that asks a model: its model's cutoff against the test window (found in review:
    --require-after-cutoff read the team's model alone, and llm-trader asked its model on a window inside
    its training data without a word)."""
    cfg = baseline_config(exp)
    strategies = {n: make_strategy(n, cfg.strategy_params.get(n), cfg.llm) for n in cfg.strategies}
    return {n: b for n, b in knowledge(cfg, strategies).items() if b.get("label") != "no-model"}


def check_inputs(exp: ExperimentConfig) -> str | None:
    """What the units would refuse, checked before the experiment writes
    anything: each window's prices for every ticker, the team's corpus over
    both windows, the baselines' parameters. Returns what the test window's
    gaps do to its annualised figures (a 24/7 file with days missing), for
    the experiment to say once (each unit's metrics.json says it too)."""

    for p in exp.protocols:
        workflow.preflight(train_config(exp, "full", 1, p))
        workflow.preflight(_run_config(exp, exp.test, [TEAM], {TEAM: _team(exp, "full", p)}))
    return workflow.preflight(baseline_config(exp)).gaps


#: the top-level names an experiment writes (status.claim removes a failed
#: experiment's leftovers only when its folder holds nothing else)
EXPERIMENT_LAYOUT = frozenset(
    {"experiment.json", "results.json", "equity.png", "beliefs.png", "beliefs.md", "train", "test", "baselines",
     "config.yaml", "report.html", "placebo"}
)  # fmt: skip


#: what an experiment writes before a unit has started: its status, the placebo corpora, baselines
#: running (a disposable folder holding more is kept)
EXPERIMENT_EARLY = ("experiment.json", "config.yaml", "placebo/*", "baselines/*")


def _finished_units(root: Path) -> int:
    """Units a former command finished in ``root`` (any config)."""
    n = 0
    for kind, marker in (("train", "train.json"), ("test", METRICS)):
        d = root / kind
        if d.is_dir():
            n += sum(1 for u in d.iterdir() if _status(u, marker) == "complete")
    base = root / "baselines"
    if _status(base, METRICS) == "complete" or (
        base.is_dir() and any(_status(u, METRICS) == "complete" for u in base.iterdir())
    ):
        n += 1
    return n


def _nothing_kept(root: Path) -> bool:
    """After a failure: nothing finished, nothing started (the directory then goes)."""
    return not _finished_units(root) and not any((root / d).exists() for d in ("train", "test"))


#: placebo.json's word of a masked experiment's flip-tone, which the word list builds
MASKED_FLIP = (
    "word list: a masked run's model never rewrites an item (a rewrite request shows it the item whole, "
    "which the mask gives its team as topics)"
)


def _tone_rewriter(exp: ExperimentConfig) -> ToneRewriter | None:
    """The llm brain's flip-tone: the team's own model settings, its cache; None in a masked
    experiment (found in review: the rewriter sent the model under test each of the test window's
    items whole, masked only word by word, and 64 of 66 named their MSFT item to the corpus adversary,
    in calls no audit read)."""
    settings = layered(exp.llm, {**TEAM_LLM, "answer_max_tokens": 600}, exp.team.llm)
    return None if settings.anonymize else ToneRewriter(build_client(settings))


def write_placebos(exp: ExperimentConfig, out: Path) -> None:
    """The placebo corpora of ``exp``'s test window under ``out``, built once
    from the team's own before any test runs (deterministic in the seed); a
    rolling evaluation calls it for each window."""
    if not exp.placebos:
        return

    source = inputs_for(exp).source
    for kind in exp.placebos:
        rewrite = _tone_rewriter(exp) if kind == "flip-tone" and exp.brain == "llm" else None
        note = MASKED_FLIP if kind == "flip-tone" and exp.brain == "llm" and rewrite is None else None
        try:
            write_placebo(kind, exp.team.events, exp.tickers, exp.test.start,
                          exp.test.end, exp.seed, placebo_dir(out, kind), source, rewrite, note)  # fmt: skip
        finally:
            if rewrite is not None:
                rewrite.client.close()


def _run(exp: ExperimentConfig, out: Path, progress: bool, executor: Executor) -> ExperimentReport:
    write_placebos(exp, out)
    phases = [[(u.name, Job(u, exp, out)) for u in phase] for phase in units(exp)]
    done = run_phases(
        phases,
        lambda job: unit_done(job.unit, job.exp, job.root),
        executor,
        bar={"unit": "unit", "desc": "experiment", "disable": not progress},
        note=lambda name, _result: f"done {name}",
    )
    results = collect(exp, out)
    results["model_knowledge"] = experiment_knowledge(exp)
    if exp.placebos:
        results["placebo"] = placebo_results(exp, out, results)

    results["significance"] = workflow.experiment_stats.significance(exp, out, results, reps=exp.bootstrap_reps)
    write_atomic(out / "results.json", json_text(results))
    plot_experiment(exp, out, results)
    return ExperimentReport(out, results, done.ran, done.skipped)
