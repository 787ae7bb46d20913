"""The experiment's config model: what ``experiment.yaml`` may say and how it is checked.

:class:`ExperimentConfig` (pydantic, ``extra="forbid"``) holds the tickers,
the training and test windows, repeats, episodes, ablations, protocols,
baselines and the team's, data, broker and metrics sections;
:func:`fincon.config.read_yaml` reads the file. Pure validation: nothing here runs a
backtest or touches a directory. The run-level checks on the configs the
units will run (llm section, data) are made by
:func:`fincon.workflow.experiment.load_experiment`.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal

from pydantic import Field, PlainSerializer, ValidationError, field_validator, model_validator

from fincon import data, workflow
from fincon.agents.protocols import PROTOCOLS, protocol_names
from fincon.agents.team.params import GROUP as TEAM_GROUP, FinConParams
from fincon.config import WHAT, RunSections, Section
from fincon.flag import Flag
from fincon.strategies.registry import strategy_names
from fincon.validation import IsoDate, format_validation_error, once
from fincon.workflow.executors import ExecutorSpec

TEAM = "fincon"
ABLATIONS = ("full", "no-cvar", "no-beliefs")
BASELINES = ("buy-and-hold", "markowitz", "equal-weight", "sma-cross")
#: the paper's windows (the sample corpus covers 2022-01-03 .. 2023-06-09)
TRAIN_WINDOW = (dt.date(2022, 1, 3), dt.date(2022, 10, 4))
TEST_WINDOW = (dt.date(2022, 10, 5), dt.date(2023, 6, 9))
#: the help sections of the experiment's flags (fincon.cli.flags)

TRAINING = "training"
ROLLING = "rolling evaluation (instead of one train/test split; docs/experiments.md)"
SEED_STRIDE = 1000  # llm test runs: the manager's seed of repeat r = base + 1000 * (seed + r - 1)


def _given(team: FinConParams) -> dict[str, Any]:
    return team.model_dump(mode="json", exclude_defaults=True)


class Window(Section):
    start: Annotated[IsoDate, Flag(help="first {section} day, YYYY-MM-DD (default {default})", group=WHAT)]
    end: Annotated[IsoDate, Flag(help="last {section} day, YYYY-MM-DD (default {default})", group=WHAT)]

    @model_validator(mode="after")
    def _order(self):
        if self.start > self.end:
            raise ValueError(f"start {self.start} is after end {self.end}")
        return self


#: a rolling length: a number and a unit (y years, m months, w weeks, d days)
PERIOD_PATTERN = r"^[1-9][0-9]*[ymwd]$"


class RollingSpec(Section):
    """``--rolling WINDOW --step STEP --universe RULE``: successive test windows
    over ``start..end``, each with a training window of the same length right
    before it, and a universe picked by each rule at each window's start (see
    :mod:`fincon.workflow.universe`)."""

    window: Annotated[
        str,
        Flag(
            "--rolling",
            metavar="WINDOW",
            help="test on successive windows of this length (1y, 6m, 2w, 90d), each after a training "
            "window of the same length",
            group=ROLLING,
        ),
    ] = "1y"
    step: Annotated[
        str, Flag("--step", metavar="STEP", help="how far each window starts after the last (default {default})",
                  group=ROLLING)
    ] = "6m"  # fmt: skip
    #: the span the test windows lie in (a window must end by ``end`` and by the data's last day)
    start: Annotated[
        IsoDate, Flag(metavar="DAY", help="first day of the first test window (default {default})", group=ROLLING)
    ] = dt.date(2019, 1, 1)
    end: Annotated[
        IsoDate,
        Flag(metavar="DAY", help="test windows end by this day and by the data's last day (default {default})",
             group=ROLLING),
    ] = dt.date(2024, 12, 31)  # fmt: skip
    universes: Annotated[
        list[str],
        Flag(
            "--universe",
            repeat=True,
            parse=str,
            metavar="RULE",
            help="tickers of each window, picked at its start from earlier bars: all, random:N:SEED, "
            "top-volume:N (3-month dollar volume), momentum:N (12-month return) or T1,T2,...; "
            "repeatable (default all)",
            group=ROLLING,
        ),
    ] = Field(default_factory=lambda: ["all"])

    @field_validator("window", "step")
    @classmethod
    def _period(cls, v: str) -> str:
        if not re.match(PERIOD_PATTERN, v.strip().lower()):
            raise ValueError(f"{v!r} is not a length such as 1y, 6m, 2w or 90d")
        text = v.strip().lower()
        n, unit = int(text[:-1]), text[-1]
        if n * {"y": 365, "m": 31, "w": 7, "d": 1}[unit] > 30 * 366:
            raise ValueError(f"{v!r} is longer than 30 years; no data set spans more")
        return text

    @field_validator("universes")
    @classmethod
    def _universes(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("at least one universe rule is needed")
        seen: dict[tuple, str] = {}
        for rule in v:  # one universe spelled twice (MSFT and msft) was counted twice in the pooled test
            key = workflow.parse_rule(rule).canonical
            if key in seen:
                raise ValueError(f"universe {rule!r} is {seen[key]!r} again; give each universe once")
            seen[key] = rule
        return once(v)

    @model_validator(mode="after")
    def _span(self):
        if self.start >= self.end:
            raise ValueError(f"rolling start {self.start} is not before its end {self.end}")
        return self


class ExperimentConfig(RunSections):
    """The whole experiment (``--config experiment.yaml``; see examples/experiment.yaml):
    the run sections every unit shares (tickers, strategy_params, llm, data,
    broker, metrics: fincon.config.RunSections, as a backtest has them) and
    the experiment's own windows, repeats, ablations and protocols."""

    train: Annotated[Window, Flag(prefix="--train-", help="training")] = Field(
        default_factory=lambda: Window(start=TRAIN_WINDOW[0], end=TRAIN_WINDOW[1])
    )
    test: Annotated[Window, Flag(prefix="--test-", help="test")] = Field(
        default_factory=lambda: Window(start=TEST_WINDOW[0], end=TEST_WINDOW[1])
    )
    repeats: Annotated[
        int, Flag(help="repeats R; each ablation reports its median run (default {default})", group=WHAT)
    ] = Field(5, ge=1, le=100)
    episodes: Annotated[int, Flag(help="training episodes K (default {default}, as in the paper)", group=TRAINING)] = (
        Field(4, ge=1, le=100)
    )
    ablations: Annotated[
        list[Literal["full", "no-cvar", "no-beliefs"]],
        Flag(parse=str, metavar="A[,A...]", help="of full, no-cvar, no-beliefs (default all three)", group=WHAT),
    ] = Field(default_factory=lambda: list(ABLATIONS))
    #: decision protocols compared on the same team, data and cache (fincon, scm, debate)
    protocols: Annotated[
        list[str],
        Flag(
            parse=str,
            metavar="P[,P...]",
            help="decision protocols to compare on the same team, data and cache: fincon, scm, debate "
            "(default fincon); each gets every ablation and repeat",
            group=WHAT,
        ),
    ] = Field(default_factory=lambda: ["fincon"])
    baselines: Annotated[
        list[str],
        Flag(
            parse=str,
            metavar="S[,S...]",
            help="baseline strategies on the test window (default buy-and-hold,markowitz,equal-weight,sma-cross)",
            group=WHAT,
        ),
    ] = Field(default_factory=lambda: list(BASELINES))
    #: the team's parameters (strategy_params.fincon): brain, events, analysts, ...; written back
    #: without its defaults (`--events sample` and no --events are the same experiment, and resume)
    team: Annotated[FinConParams, PlainSerializer(_given)] = Field(default_factory=FinConParams)
    #: llm brain: the manager's sampling temperature in training and test (above 0: repeats differ by seed)
    temperature: Annotated[
        float,
        Flag(help="llm brain: the manager's sampling temperature, above 0 (default {default})", group=TEAM_GROUP),
    ] = Field(0.7, gt=0.0, le=2.0)
    #: base seed; repeat r uses seed + (r - 1) (rules: exploration noise; llm: sampling)
    seed: Annotated[int, Flag(help="base seed; repeat r uses seed + r - 1 (default {default})", group=TEAM_GROUP)] = (
        Field(0, ge=0, le=1_000_000)
    )
    #: rules brain: log-normal noise on the rules weights of episodes 2..K, and the weight step
    explore: Annotated[
        float,
        Flag(help="rules brain: log-normal noise on the rules weights in episodes 2..K (default {default})",
             group=TRAINING),
    ] = Field(0.3, ge=0.0, le=2.0)  # fmt: skip
    lr: Annotated[
        float, Flag(help="rules brain: weight step size, multiplied by 1 - tau (default {default})", group=TRAINING)
    ] = Field(4.0, ge=0.0, le=100.0)
    #: how the units run (local or ray); not part of the experiment's identity (excluded
    #: from experiment.json and the directory's hash: either executor resumes the other's run)
    executor: Annotated[ExecutorSpec, Flag(prefix="--")] = Field(default_factory=ExecutorSpec, exclude=True)
    #: a rolling evaluation (fincon.workflow.rolling) instead of one train/test split (None)
    rolling: Annotated[RollingSpec | None, Flag(prefix="--rolling-")] = None
    #: the statistics' bootstrap repetitions (Sharpe intervals, SPA, StepM): computed again from the
    #: units' files at the end of every run, so not part of the experiment's identity (excluded like the
    #: executor): another count re-computes the statistics of a finished experiment without running a unit
    bootstrap_reps: Annotated[
        int,
        Flag(
            metavar="N",
            help="{desc} (default {default}); not part of the experiment's identity: a finished experiment "
            "re-run with another N recomputes its statistics and runs no unit",
            group="output",
        ),
    ] = Field(
        10_000,
        ge=100,
        le=1_000_000,
        exclude=True,
        description="bootstrap repetitions of the statistics (Sharpe intervals, SPA, StepM); fewer for a quick "
        "look (1,000 gives p-values to about +-0.007 near 0.05), more for finer p-values",
    )
    #: placebo test runs of the full team (fincon.workflow.placebo): shuffle-news, flip-tone, price-twin
    placebos: Annotated[
        list[Literal["shuffle-news", "flip-tone", "price-twin"]],
        Flag(
            "--placebo",
            parse=str,
            metavar="KIND[,KIND...]",
            help="test the full team again on a placebo: shuffle-news (every item moved to a later random day "
            "of the test window), flip-tone (every item's tone reversed) or price-twin (the window's prices "
            "replaced by a block-bootstrapped twin, the items kept); the table gives its metrics beside the real "
            "run's, prediction consistency, input dependency and the profit gap (docs/experiments.md)",
            group=WHAT,
        ),
    ] = Field(default_factory=list)

    @model_validator(mode="after")
    def _placebos_need_full(self):
        if self.placebos and ("full" not in self.ablations or "fincon" not in self.protocols):
            raise ValueError("placebo runs test the full fincon team: keep the full ablation and the fincon protocol")
        return self

    @field_validator("ablations")
    @classmethod
    def _ablations(cls, v):
        if not v:
            raise ValueError("at least one ablation is needed")
        return once(v)

    @field_validator("protocols")
    @classmethod
    def _protocols(cls, v):
        bad = [x for x in v if x not in PROTOCOLS]
        if bad:
            raise ValueError(f"unknown protocol {bad[0]!r}; choose from {', '.join(protocol_names())}")
        if not v:
            raise ValueError("at least one protocol is needed")
        return once(v)

    @field_validator("baselines")
    @classmethod
    def _baselines(cls, v):
        known = [n for n in strategy_names() if n != TEAM]
        bad = [b for b in v if b not in known]
        if bad:
            raise ValueError(f"unknown baseline {bad[0]!r}; choose from {', '.join(known)}")
        return once(v)

    @field_validator("team", mode="before")
    @classmethod
    def _team(cls, v):
        if isinstance(v, FinConParams):
            return v
        if not isinstance(v, dict):
            raise ValueError("team must map the team's parameters to their values")
        for key in ("beliefs", "cvar", "explore", "explore_seed", "manager_temperature", "manager_seed", "protocol"):
            if key in v:
                raise ValueError(f"team.{key} is set by the experiment (ablations, repeats); leave it out")
        try:
            return FinConParams.model_validate(v)
        except ValidationError as exc:
            raise ValueError(format_validation_error("", exc)) from None

    @model_validator(mode="after")
    def _dataset_events(self):
        """A dataset directory brings its own events: the team reads them
        unless ``team.events`` names another corpus (fincon.data.inputs, the
        one rule; never the bundled synthetic news beside real prices)."""
        if self.data.source == "csv" and self.data.dir is not None and self.team.events == "sample":
            spec = data.open_inputs(self.data.source, self.data.dir).events_spec(None, "the agent team")
            if spec != "sample":
                self.team = self.team.model_copy(update={"events": spec})
        return self

    @model_validator(mode="after")
    def _windows(self):
        if self.train.end >= self.test.start:
            raise ValueError(
                f"the training window must end before the test window starts ({self.train.end} >= {self.test.start})"
            )
        return self

    @property
    def brain(self) -> str:
        return self.team.brain

    def team_given(self) -> dict[str, Any]:
        """The team's parameters that differ from their defaults (YAML values): what experiment.json
        holds, and what every unit's team starts from."""
        return _given(self.team)
