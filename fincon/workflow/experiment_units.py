"""The experiment's units: one training, one test run, or the baselines.

From an :class:`~fincon.workflow.experiment_config.ExperimentConfig` this
builds each unit's run config (:func:`train_config`, :func:`test_config`,
:func:`baseline_config`), says where a unit lives and whether it is done
(:func:`unit_done`, from the status in its train.json or metrics.json), and
runs one unit (:func:`run_unit`), writing only inside that unit's directory.
:class:`Job` binds a unit to its experiment as a picklable task for the
executors. Nothing here reads another unit's results (see
:mod:`fincon.workflow.experiment_results`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping

from fincon import workflow
from fincon.config import RunConfig
from fincon.engine.record import METRICS
from fincon.errors import ConfigError, FinconError
from fincon.strategies.registry import make_strategy
from fincon.validation import validated
from fincon.workflow.experiment_config import SEED_STRIDE, TEAM, ExperimentConfig, Window
from fincon.workflow.placebo import CORPUS_PLACEBOS
from fincon.workflow.status import stopped_early
from fincon.workflow.training import TrainOptions, train


def _run_config(
    exp: ExperimentConfig,
    window: Window,
    strategies: list[str],
    params: Mapping[str, Any],
    data: Mapping[str, Any] | None = None,
) -> RunConfig:
    """A unit's RunConfig, built from the experiment's typed run sections on ``window``
    (``data``: another data section, a placebo's twin prices)."""
    fields = {
        **exp.sections(),  # the run sections the experiment shares with each of its runs
        "start": window.start,
        "end": window.end,
        "strategies": strategies,
        "strategy_params": params,
        "benchmark": False,
    }
    if data is not None:
        fields["data"] = dict(data)
    return validated(RunConfig, fields, "experiment config")


def variant(protocol: str, ablation: str) -> str:
    """A team variant's name: the ablation, prefixed by its protocol unless fincon."""
    return ablation if protocol == "fincon" else f"{protocol}-{ablation}"


def _team(exp: ExperimentConfig, ablation: str, protocol: str = "fincon") -> dict[str, Any]:
    team = exp.team_given()
    if ablation == "no-cvar":
        team["cvar"] = False
    if protocol != "fincon":
        team["protocol"] = protocol
    return team


def configured_llm(exp: ExperimentConfig) -> dict[str, Any]:
    """The LLM settings the experiment's config sets for the team (its ``llm``
    section under the team's own): a temperature above 0 here samples the
    manager in place of ``--temperature``, as training does."""
    return {**exp.llm.model_dump(mode="json", exclude_unset=True), **(exp.team_given().get("llm") or {})}


def train_config(exp: ExperimentConfig, ablation: str, repeat: int, protocol: str = "fincon") -> RunConfig:
    return _run_config(exp, exp.train, [TEAM], {TEAM: _team(exp, ablation, protocol)})


def train_options(exp: ExperimentConfig, ablation: str, repeat: int):
    return TrainOptions(
        episodes=exp.episodes,
        learn=ablation != "no-beliefs",
        explore=exp.explore,
        lr=exp.lr,
        temperature=exp.temperature,
        seed=exp.seed + repeat - 1,
    )


def placebo_of(ablation: str) -> str | None:
    """The placebo a test variant runs on (``placebo-shuffle-news`` -> shuffle-news), or None."""
    return ablation[len("placebo-") :] if ablation.startswith("placebo-") else None


def placebo_dir(root: Path, kind: str) -> Path:
    """Where an experiment keeps the placebo corpus ``kind`` (built once, before its test runs)."""
    return root / "placebo" / kind


def test_config(
    exp: ExperimentConfig,
    ablation: str,
    repeat: int,
    beliefs: Path,
    protocol: str = "fincon",
    events: Path | None = None,
    prices: Path | None = None,
) -> RunConfig:
    """A test run's config; ``events``: another corpus (a placebo) in place of
    the team's; ``prices``: a folder of other prices (the price twin), the
    team's own corpus kept."""
    team = {
        **_team(exp, "full" if placebo_of(ablation) else ablation, protocol),
        "beliefs": str(Path(beliefs).absolute()),
    }
    if events is not None:
        team["events"] = str(Path(events).absolute())
    if exp.brain == "llm":
        # as in training's exploring episodes: the manager samples (a temperature
        # above 0, one seed per repeat); the analysts keep the run's sampling, so
        # their unchanged inputs are cache hits across repeats and ablations
        llm = configured_llm(exp)
        team["manager_temperature"] = float(llm.get("temperature") or exp.temperature)
        team["manager_seed"] = int(llm.get("seed", 0)) + SEED_STRIDE * (exp.seed + repeat - 1)
    data = None
    if prices is not None:
        team.setdefault("events", "sample")  # the corpus the real run reads, now beside other prices
        data = {"source": "csv", "dir": str(Path(prices).absolute())}
    return _run_config(exp, exp.test, [TEAM], {TEAM: team}, data)


def baseline_config(exp: ExperimentConfig) -> RunConfig:
    params = {k: v for k, v in exp.strategy_params.items() if k in exp.baselines}
    unused = sorted(set(exp.strategy_params) - set(exp.baselines))
    if unused:
        raise ConfigError(
            f"experiment config: strategy_params given for {', '.join(unused)}, which is not among "
            f"the baselines ({', '.join(exp.baselines)}); team parameters go under team:"
        )
    cfg = _run_config(exp, exp.test, list(exp.baselines), params)

    for name, p in params.items():  # a bad baseline parameter fails now, not after the trainings
        make_strategy(name, p)
    return cfg


def buy_and_hold_run(exp: ExperimentConfig, root: Path, prices: Path | None = None) -> Path:
    """Buy-and-hold on the test window as the experiment's broker runs it (its costs, its fills): on the
    real prices the baselines' own run when buy-and-hold is one, else a control run of its own; on a price
    twin's folder ``prices``, a control run beside the twin. What a placebo measures the team's edge
    against on each market: a close-to-close ratio without costs made the placebo table's buy-and-hold
    another number than the baseline table's."""
    if prices is None and "buy-and-hold" in exp.baselines:
        return baseline_dir(root, exp, "buy-and-hold")
    path = root / "placebo" / ("buy-and-hold" if prices is None else f"buy-and-hold-on-{prices.name}")
    if _status(path, METRICS) != "complete":
        data = None if prices is None else {"source": "csv", "dir": str(Path(prices).absolute())}
        cfg = _run_config(exp, exp.test, ["buy-and-hold"], {}, data)
        workflow.run_config(cfg, path, progress=False, replace=True, warn_knowledge=False, control=True, plots=False)
    return path


@dataclass(frozen=True)
class Unit:
    """One independent piece of work: a training, a test run or the baselines."""

    kind: Literal["train", "test", "baselines"]
    ablation: str = ""
    repeat: int = 0
    protocol: str = "fincon"

    @property
    def name(self) -> str:
        if self.kind == "baselines":
            return "baselines"
        return f"{self.kind}/{variant(self.protocol, self.ablation)}-r{self.repeat}"

    def path(self, root: Path) -> Path:
        return root / self.name


def baseline_dir(root: Path, exp: ExperimentConfig, name: str) -> Path:
    """A baseline's run dir: one sub-directory each, or baselines/ itself when
    there is only one (a single-strategy run has no sub-directories)."""
    return root / "baselines" if len(exp.baselines) == 1 else root / "baselines" / name


def _status(path: Path, marker: str) -> str | None:
    try:
        return json.loads((path / marker).read_text()).get("status")
    except (OSError, ValueError):
        return None


def unit_done(unit: Unit, exp: ExperimentConfig, root: Path) -> bool:
    path = unit.path(root)
    if unit.kind == "train":
        return _status(path, "train.json") == "complete"
    if unit.kind == "test":
        return _status(path, METRICS) == "complete"
    return all(_status(baseline_dir(root, exp, b), METRICS) == "complete" for b in exp.baselines)


def run_unit(unit: Unit, exp: ExperimentConfig, root: Path, progress: bool = False) -> str:
    """Run one unit (resuming a training); returns its directory. A unit whose run stopped before its
    first day is a unit stopped early (exit 3: the experiment keeps the others, the same command resumes)."""
    with stopped_early(True, "the other units are kept, rerun the same command to resume"):
        return _run_unit(unit, exp, root, progress)


def _run_unit(unit: Unit, exp: ExperimentConfig, root: Path, progress: bool) -> str:
    path = unit.path(root)
    if unit.kind == "train":
        train(
            train_config(exp, unit.ablation, unit.repeat, unit.protocol),
            path,
            train_options(exp, unit.ablation, unit.repeat),
            progress=progress,
            warn_knowledge=False,  # the experiment says it once
        )
        return str(path)
    placebo = placebo_of(unit.ablation)
    cfg = (
        test_config(
            exp,
            unit.ablation,
            unit.repeat,
            # a placebo tests the full team's own beliefs on the placebo corpus
            Unit("train", "full" if placebo else unit.ablation, unit.repeat, unit.protocol).path(root),
            unit.protocol,
            placebo_dir(root, placebo) if placebo in CORPUS_PLACEBOS else None,
            placebo_dir(root, placebo) if placebo == "price-twin" else None,
        )
        if unit.kind == "test"
        else baseline_config(exp)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    # a placebo run is a control of the full team, never a configuration tried (the ledger's role)
    report = workflow.run_config(
        cfg, path, progress=progress, replace=True, warn_knowledge=False, control=bool(placebo)
    )
    if not report.complete:
        why = "; ".join(
            [f"{n}: {r.stopped}" for n, r in report.results.items() if r.stopped]
            + [f"{n}: {r}" for n, r in report.failed.items()]
        )
        err = FinconError(f"{unit.name} stopped early ({why}); rerun the same command to resume")
        err.exit_code = 3
        raise err
    return str(path)


@dataclass(frozen=True)
class Job:
    """A unit bound to its experiment: a picklable, argument-free task."""

    unit: Unit
    exp: ExperimentConfig
    root: Path

    @property
    def name(self) -> str:  # how an executor names the task in an error
        return self.unit.name

    def __call__(self) -> str:
        return run_unit(self.unit, self.exp, self.root)
