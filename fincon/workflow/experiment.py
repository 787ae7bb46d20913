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
:class:`~fincon.workflow.executors.RayExecutor` as Ray tasks in parallel
(``--executor ray``; see :mod:`fincon.workflow.executors`). Both write the
same files.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fincon.config import BrokerConfig, DataConfig, MetricsConfig, RunConfig, _set_path
from fincon.workflow.executors import Executor, ExecutorSpec, Task, serial  # noqa: F401 (Task: the public name)
from fincon.workflow.status import claim, marking
from fincon.errors import ConfigError, FinconError
from fincon.validation import format_validation_error

TEAM = "fincon"
ABLATIONS = ("full", "no-cvar", "no-beliefs")
BASELINES = ("buy-and-hold", "markowitz", "equal-weight", "sma-cross")
#: the paper's windows (the sample corpus covers 2022-01-03 .. 2023-06-09)
TRAIN_WINDOW = (dt.date(2022, 1, 3), dt.date(2022, 10, 4))
TEST_WINDOW = (dt.date(2022, 10, 5), dt.date(2023, 6, 9))
SEED_STRIDE = 1000  # llm test runs: the manager's seed of repeat r = base + 1000 * (seed + r - 1)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Window(_Section):
    start: dt.date
    end: dt.date

    @field_validator("start", "end", mode="before")
    @classmethod
    def _iso(cls, v: Any) -> Any:
        from fincon.config import iso_date_value

        return iso_date_value(v)

    @model_validator(mode="after")
    def _order(self):
        if self.start > self.end:
            raise ValueError(f"start {self.start} is after end {self.end}")
        return self


class ExperimentConfig(_Section):
    """The whole experiment (``--config experiment.yaml``; see examples/experiment.yaml)."""

    tickers: list[str] = Field(default_factory=lambda: ["TSLA"])
    train: Window = Field(default_factory=lambda: Window(start=TRAIN_WINDOW[0], end=TRAIN_WINDOW[1]))
    test: Window = Field(default_factory=lambda: Window(start=TEST_WINDOW[0], end=TEST_WINDOW[1]))
    repeats: int = Field(5, ge=1, le=100)
    episodes: int = Field(4, ge=1, le=100)
    ablations: list[Literal["full", "no-cvar", "no-beliefs"]] = Field(default_factory=lambda: list(ABLATIONS))
    #: decision protocols compared on the same team, data and cache (fincon, scm, debate)
    protocols: list[str] = Field(default_factory=lambda: ["fincon"])
    baselines: list[str] = Field(default_factory=lambda: list(BASELINES))
    #: the team's parameters (strategy_params.fincon): brain, events, analysts, ...
    team: dict[str, Any] = Field(default_factory=dict)
    #: parameters of the baselines, e.g. {markowitz: {lookback: 126}}
    strategy_params: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: llm brain: the manager's sampling temperature in training and test (above 0: repeats differ by seed)
    temperature: float = Field(0.7, gt=0.0, le=2.0)
    #: base seed; repeat r uses seed + (r - 1) (rules: exploration noise; llm: sampling)
    seed: int = Field(0, ge=0, le=1_000_000)
    #: rules brain: log-normal noise on the rules weights of episodes 2..K, and the weight step
    explore: float = Field(0.3, ge=0.0, le=2.0)
    lr: float = Field(4.0, ge=0.0, le=100.0)
    llm: dict[str, Any] = Field(default_factory=dict)
    data: DataConfig = Field(default_factory=DataConfig)
    broker: BrokerConfig = Field(default_factory=BrokerConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    #: how the units run (local or ray); not part of the experiment's identity (excluded
    #: from experiment.json and the directory's hash: either executor resumes the other's run)
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec, exclude=True)

    @field_validator("tickers")
    @classmethod
    def _tickers(cls, v: list[str]) -> list[str]:
        out = [t.strip().upper() for t in v if t.strip()]
        if not out:
            raise ValueError("at least one ticker is needed")
        return list(dict.fromkeys(out))

    @field_validator("ablations")
    @classmethod
    def _ablations(cls, v):
        if not v:
            raise ValueError("at least one ablation is needed")
        return list(dict.fromkeys(v))

    @field_validator("protocols")
    @classmethod
    def _protocols(cls, v):
        from fincon.agents.protocols import PROTOCOLS, protocol_names

        bad = [x for x in v if x not in PROTOCOLS]
        if bad:
            raise ValueError(f"unknown protocol {bad[0]!r}; choose from {', '.join(protocol_names())}")
        if not v:
            raise ValueError("at least one protocol is needed")
        return list(dict.fromkeys(v))

    @field_validator("baselines")
    @classmethod
    def _baselines(cls, v):
        from fincon.strategies.registry import strategy_names

        known = [n for n in strategy_names() if n != TEAM]
        bad = [b for b in v if b not in known]
        if bad:
            raise ValueError(f"unknown baseline {bad[0]!r}; choose from {', '.join(known)}")
        return list(dict.fromkeys(v))

    @field_validator("team")
    @classmethod
    def _team(cls, v):
        from fincon.agents.team import FinConParams

        for key in ("beliefs", "cvar", "explore", "explore_seed", "manager_temperature", "manager_seed",
                    "protocol"):
            if key in v:
                raise ValueError(f"team.{key} is set by the experiment (ablations, repeats); leave it out")
        try:
            params = FinConParams.model_validate(v)
        except ValidationError as exc:
            raise ValueError(format_validation_error("", exc)) from None
        # defaults left out: `--events sample` and no --events are the same experiment (and resume)
        return params.model_dump(mode="json", exclude_defaults=True)

    @model_validator(mode="after")
    def _windows(self):
        if self.train.end >= self.test.start:
            raise ValueError(f"the training window must end before the test window starts "
                             f"({self.train.end} >= {self.test.start})")
        return self

    @property
    def brain(self) -> str:
        return self.team.get("brain", "llm")


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"config {path} is not UTF-8 text; save it as UTF-8 YAML") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"config {path}{f' line {mark.line + 1}' if mark else ''}: not valid YAML") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"config {path}: the top level must be a mapping of keys")
    return loaded


def load_experiment(path: Path | None = None, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
    """Read ``path`` (YAML), apply dotted ``overrides`` (None: not given) and validate."""
    tree = _read_yaml(path) if path is not None else {}
    if isinstance(tree.get("executor"), str):  # executor: ray is short for executor: {kind: ray}
        tree["executor"] = {"kind": tree["executor"]}
    for key, value in (overrides or {}).items():
        if value is not None:
            _set_path(tree, key, value)
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


# -- the units ------------------------------------------------------------------


def _run_config(exp: ExperimentConfig, window: Window, strategies: list[str],
                params: dict[str, dict[str, Any]]) -> RunConfig:
    from fincon.config import load_config

    tree = {"tickers": exp.tickers, "start": window.start.isoformat(), "end": window.end.isoformat(),
            "strategies": strategies, "strategy_params": params, "benchmark": False,
            "llm": exp.llm, "data": exp.data.model_dump(mode="json"),
            "broker": exp.broker.model_dump(mode="json"), "metrics": exp.metrics.model_dump(mode="json")}
    return load_config(None, tree)


def variant(protocol: str, ablation: str) -> str:
    """A team variant's name: the ablation, prefixed by its protocol unless fincon."""
    return ablation if protocol == "fincon" else f"{protocol}-{ablation}"


def _team(exp: ExperimentConfig, ablation: str, protocol: str = "fincon") -> dict[str, Any]:
    team = dict(exp.team)
    if ablation == "no-cvar":
        team["cvar"] = False
    if protocol != "fincon":
        team["protocol"] = protocol
    return team


def train_config(exp: ExperimentConfig, ablation: str, repeat: int, protocol: str = "fincon") -> RunConfig:
    return _run_config(exp, exp.train, [TEAM], {TEAM: _team(exp, ablation, protocol)})


def train_options(exp: ExperimentConfig, ablation: str, repeat: int):
    from fincon.workflow.training import TrainOptions

    return TrainOptions(episodes=exp.episodes, learn=ablation != "no-beliefs", explore=exp.explore, lr=exp.lr,
                        temperature=exp.temperature, seed=exp.seed + repeat - 1)


def test_config(exp: ExperimentConfig, ablation: str, repeat: int, beliefs: Path,
                protocol: str = "fincon") -> RunConfig:
    team = {**_team(exp, ablation, protocol), "beliefs": str(Path(beliefs).absolute())}
    if exp.brain == "llm":
        # as in training's exploring episodes: the manager samples (a temperature
        # above 0, one seed per repeat); the analysts keep the run's sampling, so
        # their unchanged inputs are cache hits across repeats and ablations
        llm = {**exp.llm, **(team.get("llm") or {})}
        team["manager_temperature"] = float(llm.get("temperature") or exp.temperature)
        team["manager_seed"] = int(llm.get("seed", 0)) + SEED_STRIDE * (exp.seed + repeat - 1)
    return _run_config(exp, exp.test, [TEAM], {TEAM: team})


def baseline_config(exp: ExperimentConfig) -> RunConfig:
    params = {k: v for k, v in exp.strategy_params.items() if k in exp.baselines}
    unused = sorted(set(exp.strategy_params) - set(exp.baselines))
    if unused:
        raise ConfigError(f"experiment config: strategy_params given for {', '.join(unused)}, which is not among "
                          f"the baselines ({', '.join(exp.baselines)}); team parameters go under team:")
    cfg = _run_config(exp, exp.test, list(exp.baselines), params)
    from fincon.strategies.registry import make_strategy

    for name, p in params.items():  # a bad baseline parameter fails now, not after the trainings
        make_strategy(name, p)
    return cfg


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
        return _status(path, "metrics.json") == "complete"
    return all(_status(baseline_dir(root, exp, b), "metrics.json") == "complete" for b in exp.baselines)


def run_unit(unit: Unit, exp: ExperimentConfig, root: Path, progress: bool = False) -> str:
    """Run one unit (resuming a training); returns its directory."""
    from fincon.workflow.runner import run_config

    path = unit.path(root)
    if unit.kind == "train":
        from fincon.workflow.training import train

        train(train_config(exp, unit.ablation, unit.repeat, unit.protocol), path,
              train_options(exp, unit.ablation, unit.repeat), progress=progress)
        return str(path)
    cfg = (test_config(exp, unit.ablation, unit.repeat,
                       Unit("train", unit.ablation, unit.repeat, unit.protocol).path(root), unit.protocol)
           if unit.kind == "test" else baseline_config(exp))
    path.parent.mkdir(parents=True, exist_ok=True)
    report = run_config(cfg, path, progress=progress, replace=True)
    if not report.complete:
        why = "; ".join([f"{n}: {r.stopped}" for n, r in report.results.items() if r.stopped]
                        + [f"{n}: {r}" for n, r in report.failed.items()])
        err = FinconError(f"{unit.name} stopped early ({why}); rerun the same command to resume")
        err.exit_code = 3
        raise err
    return str(path)


# -- the experiment ---------------------------------------------------------------


@dataclass
class ExperimentReport:
    out: Path
    results: dict[str, Any]
    ran: list[str] = field(default_factory=list)  # units run by this command (the rest were done)
    skipped: list[str] = field(default_factory=list)


def default_out(exp: ExperimentConfig, root: Path = Path("runs")) -> Path:
    key = json.dumps(exp.model_dump(mode="json"), sort_keys=True)
    return root / f"experiment_{'-'.join(exp.tickers)[:60]}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def units(exp: ExperimentConfig) -> tuple[list[Unit], list[Unit]]:
    """The two phases: (baselines and trainings), then the test runs."""
    combos = [(p, a) for p in exp.protocols for a in exp.ablations]
    first = [Unit("baselines")] + [Unit("train", a, r, p) for r in range(1, exp.repeats + 1) for p, a in combos]
    second = [Unit("test", a, r, p) for r in range(1, exp.repeats + 1) for p, a in combos]
    return first, second


def run_experiment(exp: ExperimentConfig, out: Path | None = None, *, progress: bool = True,
                   executor: Executor = serial) -> ExperimentReport:
    """Run (or resume) the experiment; see the module docstring."""
    from fincon.engine.rundir import check_out_path

    out = check_out_path(out) if out is not None else default_out(exp)
    state = {"config": exp.model_dump(mode="json")}
    marker = out / "experiment.json"
    # every check before the first file: the directory, both windows' data, the corpus, the baselines
    claim(out, marker, state, "experiment", _finished_units)
    check_inputs(exp)
    made = [p for p in reversed([out, *out.parents]) if not p.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FinconError(f"cannot create the experiment directory {out}: {exc.strerror or exc}") from None
    try:
        with marking(marker, state):
            return _run(exp, out, state, marker, progress, executor)
    except BaseException:
        if out in made and not _finished_units(out) and not any((out / d).exists() for d in ("train", "test")):
            shutil.rmtree(out, ignore_errors=True)  # nothing finished, nothing started: leave nothing behind
            for p in reversed(made[:-1]):
                try:
                    p.rmdir()
                except OSError:
                    break
        raise


def check_inputs(exp: ExperimentConfig) -> None:
    """What the units would refuse, checked before the experiment writes
    anything: each window's prices for every ticker, the team's corpus over
    both windows, the baselines' parameters."""
    from fincon.workflow.runner import preflight

    for p in exp.protocols:
        preflight(train_config(exp, "full", 1, p))
        preflight(_run_config(exp, exp.test, [TEAM], {TEAM: _team(exp, "full", p)}))
    preflight(baseline_config(exp))


def _finished_units(root: Path) -> int:
    """Units a former command finished in ``root`` (any config)."""
    n = 0
    for kind, marker in (("train", "train.json"), ("test", "metrics.json")):
        d = root / kind
        if d.is_dir():
            n += sum(1 for u in d.iterdir() if _status(u, marker) == "complete")
    base = root / "baselines"
    if _status(base, "metrics.json") == "complete" or (
            base.is_dir() and any(_status(u, "metrics.json") == "complete" for u in base.iterdir())):
        n += 1
    return n


def _run(exp: ExperimentConfig, out: Path, state: dict[str, Any], marker: Path, progress: bool,
         executor: Executor) -> ExperimentReport:
    from tqdm import tqdm

    phases = units(exp)
    total = sum(len(p) for p in phases)
    ran: list[str] = []
    skipped: list[str] = []
    bar = tqdm(total=total, unit="unit", desc="experiment", disable=not progress, dynamic_ncols=True)
    try:
        for phase in phases:
            todo = []
            for u in phase:
                if unit_done(u, exp, out):
                    skipped.append(u.name)
                    bar.update(1)
                else:
                    todo.append(u)

            def done(i: int, _result: Any, todo=todo) -> None:
                ran.append(todo[i].name)
                bar.update(1)
                bar.set_postfix_str(f"done {todo[i].name}")

            executor([_Job(u, exp, out) for u in todo], done)
    finally:
        bar.close()
    results = collect(exp, out)
    _write_atomic(out / "results.json", json.dumps(results, indent=1, sort_keys=True) + "\n")
    plot_experiment(exp, out, results)
    _write_atomic(marker, json.dumps({**state, "status": "complete"}, indent=1, sort_keys=True) + "\n")
    return ExperimentReport(out, results, ran, skipped)


@dataclass(frozen=True)
class _Job:
    """A unit bound to its experiment: a picklable, argument-free task."""

    unit: Unit
    exp: ExperimentConfig
    root: Path

    @property
    def name(self) -> str:  # how an executor names the task in an error
        return self.unit.name

    def __call__(self) -> str:
        return run_unit(self.unit, self.exp, self.root)


# -- results ------------------------------------------------------------------------


def load_equity(run: Path):
    import pandas as pd

    df = pd.read_csv(run / "equity.csv", parse_dates=["date"])
    return df.set_index("date")["value"]


def daily_log_returns(equity):
    import numpy as np

    return np.log(equity / equity.shift(1)).dropna()


KEYS = ("cr_pct", "sharpe", "mdd_pct", "sortino", "ann_vol_pct", "turnover", "n_trades", "n_days")


def _metrics(run: Path) -> dict[str, Any]:
    m = json.loads((run / "metrics.json").read_text())
    return {k: m.get(k) for k in KEYS}


def _usage(run: Path, protocol: str) -> dict[str, Any]:
    """Cost of a team run per simulated day, and its protocol's own measures."""
    s = json.loads((run / "summary.json").read_text()).get("strategy_summary") or {}
    days = max(1, int(s.get("team_days") or 0))
    own = {k: v for k, v in sorted(s.items()) if protocol != "fincon" and k.startswith(f"{protocol}_")}
    return {"calls_per_day": round((s.get("llm_calls") or 0) / days, 3),
            "asks_per_day": s.get("team_calls_per_day"), "tokens_per_day": round((s.get("llm_tokens") or 0) / days, 1),
            "cost_usd": s.get("llm_cost_usd", 0.0), "fallbacks": s.get("team_fallbacks", 0),
            "alerts": s.get("team_alerts", 0), "protocol_measures": own}


def day_decisions(run: Path) -> dict[str, Any]:
    """date -> the day's target weights rounded to 0.01 (None: no new decision, positions kept)."""
    out: dict[str, Any] = {}
    path = run / "decisions.jsonl"
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        w = d.get("weights")
        out[d["date"]] = None if w is None else tuple(sorted((t, round(float(x), 2)) for t, x in w.items()))
    return out


def differs_share(run: Path, plain: Path) -> float | None:
    """How often a protocol's daily decision differed from the plain (fincon) team's on the same day."""
    a, b = day_decisions(run), day_decisions(plain)
    days = sorted(set(a) & set(b))
    return round(sum(a[d] != b[d] for d in days) / len(days), 4) if days else None


def median_repeat(crs: dict[int, float]) -> int:
    """The repeat of the median run by CR (even count: the lower middle run; ties: the lower repeat)."""
    order = sorted(crs, key=lambda r: (crs[r], r))
    return order[(len(order) - 1) // 2]


def wilcoxon_test(a, b) -> dict[str, Any]:
    """Two-sided Wilcoxon signed-rank test of paired daily returns (aligned by date)."""
    from scipy.stats import wilcoxon

    pair = a.to_frame("a").join(b.to_frame("b"), how="inner").dropna()
    out: dict[str, Any] = {"n": int(len(pair)), "statistic": None, "p_value": None}
    if (pair["a"] - pair["b"]).abs().sum() == 0:
        out["note"] = "identical daily returns"
        return out
    res = wilcoxon(pair["a"].to_numpy(), pair["b"].to_numpy())
    out.update(statistic=float(res.statistic), p_value=float(res.pvalue))
    return out


def _num(v) -> float:
    return float("nan") if v is None else float(v)


def collect(exp: ExperimentConfig, root: Path) -> dict[str, Any]:
    """results.json: every unit's test metrics, the median runs and their tests."""
    baselines = {b: _metrics(baseline_dir(root, exp, b)) for b in exp.baselines}
    ranked = [b for b in exp.baselines if not math.isnan(_num(baselines[b]["sharpe"]))]
    best = max(ranked, key=lambda b: (_num(baselines[b]["sharpe"]), -exp.baselines.index(b))) if ranked else None
    best_returns = daily_log_returns(load_equity(baseline_dir(root, exp, best))) if best else None
    runs: dict[str, dict[str, Any]] = {}
    medians: dict[str, Any] = {}
    for p, a in [(p, a) for p in exp.protocols for a in exp.ablations]:
        v = variant(p, a)
        by_repeat = {r: {**_metrics(Unit("test", a, r, p).path(root)), **_usage(Unit("test", a, r, p).path(root), p)}
                     for r in range(1, exp.repeats + 1)}
        for r, m in by_repeat.items():
            train_rows = _train_rows(Unit("train", a, r, p).path(root))
            runs[f"{v}-r{r}"] = {**m, "protocol": p, "ablation": a, "repeat": r,
                                 "train_objectives": [row["objective"] for row in train_rows]}
        rep = median_repeat({r: _num(m["cr_pct"]) for r, m in by_repeat.items()})
        run = Unit("test", a, rep, p).path(root)
        test = wilcoxon_test(daily_log_returns(load_equity(run)), best_returns) if best else None
        crs = [_num(m["cr_pct"]) for m in by_repeat.values()]
        medians[v] = {"protocol": p, "ablation": a, "repeat": rep, "run_dir": str(run.relative_to(root)),
                      **by_repeat[rep], "cr_pct_min": min(crs), "cr_pct_max": max(crs),
                      "wilcoxon": {**(test or {}), "against": best}}
    for v, m in medians.items():  # how often each protocol decided otherwise than the plain team
        plain = medians.get(variant("fincon", m["ablation"]))
        if plain is not None and m["protocol"] != "fincon":
            m["differs_from_fincon"] = differs_share(root / m["run_dir"], root / plain["run_dir"])
    return {"tickers": exp.tickers, "train": exp.train.model_dump(mode="json"),
            "test": exp.test.model_dump(mode="json"), "repeats": exp.repeats, "episodes": exp.episodes,
            "brain": exp.brain, "returns": "daily log returns; Wilcoxon signed-rank, two-sided",
            "baselines": baselines, "best_baseline": best, "runs": runs, "median": medians}


def _train_rows(path: Path) -> list[dict[str, Any]]:
    rows_path = path / "episodes.jsonl"
    if not rows_path.is_file():
        return []
    return [json.loads(x) for x in rows_path.read_text(encoding="utf-8").splitlines() if x.strip()]


def plot_experiment(exp: ExperimentConfig, root: Path, results: dict[str, Any]) -> None:
    """equity.png (median runs + baselines), beliefs.png and beliefs.md (the
    belief evolution of the full ablation's median repeat)."""
    from fincon.engine.plotting import plot_equity
    from fincon.workflow.training import plot_beliefs

    curves = {}
    for v, m in results["median"].items():
        curves[f"{m.get('protocol', 'fincon')} {m.get('ablation', v)} (median: r{m['repeat']})"] = \
            load_equity(root / m["run_dir"])
    for b in exp.baselines:
        label = f"{b} (best baseline)" if b == results["best_baseline"] else b
        curves[label] = load_equity(baseline_dir(root, exp, b))
    plot_equity(curves, root / "equity.png",
                f"{', '.join(exp.tickers)}  test {exp.test.start} .. {exp.test.end}  "
                f"({exp.repeats} repeats, median runs)")
    v = "full" if "full" in results["median"] else next(iter(results["median"]))
    m = results["median"][v]
    a, rep = m.get("ablation", v), m["repeat"]
    train_dir = Unit("train", a, rep, m.get("protocol", "fincon")).path(root)
    rows = _train_rows(train_dir)
    if rows:
        plot_beliefs(rows, root / "beliefs.png")
    _write_atomic(root / "beliefs.md", belief_view(a, rep, train_dir, rows))


def belief_view(ablation: str, repeat: int, train_dir: Path, rows: list[dict[str, Any]]) -> str:
    """Markdown: objective, tau, the edit and the beliefs per episode, then the learned beliefs."""
    from fincon.agents.beliefs import Beliefs

    lines = [f"# Belief evolution: {ablation}, repeat {repeat} (the median run)", "",
             f"Training directory: `{train_dir.name}`; the plot: beliefs.png.", "",
             "| episode | objective (CR %) | tau | beliefs version | rules weights in force | touched |",
             "|---:|---:|---:|---:|---|---|"]
    for r in rows:
        weights = ", ".join(f"{k} {v:.2f}" for k, v in sorted((r.get("weights_in_force") or {}).items()))
        tau = r.get("tau")
        touched = ", ".join((r.get("update") or {}).get("touched", [])) or "-"
        lines.append(f"| {r['episode']} | {r['objective']:.3f} | {'-' if tau is None else f'{tau:.2f}'} | "
                     f"{r.get('beliefs_before')} -> {r.get('beliefs_after')} | {weights or '-'} | {touched} |")
    path = train_dir / "beliefs.json"
    if path.is_file():
        b = Beliefs.model_validate_json(path.read_text())
        lines += ["", f"## Learned beliefs (version {b.version})", ""]
        for name, p in sorted(b.perspectives.items()):
            lines.append(f"- **{name}** (weight {p.weight:.3f}): {p.text or '(no text)'}")
    return "\n".join(lines) + "\n"
