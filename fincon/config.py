"""Run configuration: a YAML file validated with pydantic, overridden by flags.

Every section forbids unknown keys, so a typo (``brokr:``, ``comission``)
fails with a message that names the key instead of being ignored. Each
strategy's parameters are validated into its own params model (through
:mod:`fincon.strategies.registry`) when the config is loaded, so
``strategy_params.markowitz.lookbak`` fails here too, before any data loads.
The resolved config (defaults filled in, flags applied) is written into
every run directory as ``config.yaml``.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializeAsAny,
    ValidationError,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)

from fincon.data import DEFAULT_TICKER
from fincon.engine.costs import CommissionModel, Costs, PercentCommission, PercentSlippage, SlippageModel
from fincon.errors import ConfigError
from fincon.flag import Flag, absolute, kept_absolute
from fincon.llm.settings import LLMSettings
from fincon.strategies.registry import validate_params
from fincon.validation import IsoDate, Settings, format_validation_error, once, symbol

#: the help sections of the run's flags (fincon.cli.flags)
WHAT = "what to run"
OUTPUT = "output"


class Section(Settings):
    # inf/nan are never meaningful settings (``--cash inf`` ran with NaN values)
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False):  # type: ignore[override]
        """A copy with ``update`` validated as a whole, as the section would be
        if built with it: pydantic's own copy stores the values unchecked, so a
        dict could stand where a typed section belongs (``bench/team.py``
        crashed on a dict as ``llm``, read as LLMSettings two calls later).
        All updates are applied before the model's own checks run (a new
        training window and its test window move together)."""
        copy = super().model_copy(update=update, deep=deep)
        if not update:
            return copy
        try:
            return type(self).model_validate({k: getattr(copy, k) for k in type(self).model_fields})
        except ValidationError as exc:
            raise ConfigError("config: " + format_validation_error("", exc, type(self))) from None


class DataConfig(Section):
    source: Annotated[
        Literal["sample", "csv", "yfinance"],
        Flag(help="price source (default {default}: bundled, offline; csv implied by --data)", group="data"),
    ] = "sample"
    dir: Annotated[
        Path | None,
        AfterValidator(kept_absolute),
        Flag(
            "--data",
            metavar="DIR",
            read=absolute,
            help="a dataset directory from `fincon data import` (its prices, events and calendar), or a "
            "directory of TICKER.csv files with Date,Open,High,Low,Close,Adj Close,Volume",
            group="data",
        ),
    ] = Field(
        None,
        description="directory of TICKER.csv files, or a dataset directory written by "
        "`fincon data import` (source: csv)",
    )
    cache_dir: Annotated[Path | None, AfterValidator(kept_absolute), Flag(read=absolute, group="data")] = Field(
        None, description="yfinance cache (default $FINCON_CACHE_DIR/yfinance, else ~/.cache/fincon/yfinance)"
    )

    @model_validator(mode="after")
    def _csv_needs_dir(self):
        if self.source == "csv" and self.dir is None:
            raise ValueError("source 'csv' needs data.dir (or --data DIR)")
        if self.dir is not None and self.source != "csv":
            if "source" in self.model_fields_set:  # a folder the run would never read
                raise ValueError(
                    f"data.source {self.source} does not read data.dir {self.dir} (a folder of prices): drop one of them"
                )
            self.source = "csv"  # as --data implies it
        return self


class BrokerConfig(Section):
    """The broker: cash, fills, and the cost models (fincon.engine.costs).

    ``commission`` and ``slippage`` are typed cost models told apart by
    ``model`` (``commission: {model: per-share, per_share: 0.005, min: 1.0,
    max: 0.01}``, ``slippage: {model: bps, bps: 5}``); without ``model`` a
    mapping is the percent model's (``commission: {rate: 0.001}``). The
    flags set the same mappings (fincon.cli.broker_flags).
    """

    cash: Annotated[float, Flag(help="starting cash (default {default:,.0f})", group="broker")] = Field(
        1_000_000.0, gt=0
    )
    commission: CommissionModel = Field(
        default_factory=PercentCommission,
        description="a commission model: percent of value, per share with a "
        "minimum and a maximum per order (Interactive Brokers' style), or zero",
    )
    slippage: SlippageModel = Field(
        default_factory=PercentSlippage,
        description="a slippage model, against the trader: percent (fraction of price), bps (basis points), "
        "or range (fraction of the decision day's high-low range)",
    )
    participation: Annotated[
        float | None,
        Flag(
            metavar="FRAC",
            help="{desc}; every partial or rejected order is in orders.csv with its reason",
            group="broker",
        ),
    ] = Field(None, gt=0, le=1, description="an order fills at most this fraction of the day's volume (e.g. 0.025)")
    borrow: Annotated[float, Flag(metavar="RATE", help="{desc} (default {default:g})", group="broker")] = Field(
        0.0,
        ge=0,
        lt=1,
        description="yearly fee on the value of short positions (e.g. 0.003 for a large cap easy to borrow), "
        "taken from the cash each calendar day, in metrics.json's costs.borrow_paid",
    )
    charge_llm: Annotated[bool, Flag(group="broker")] = Field(
        False,
        description="take each day's LLM spend (the ledger's cost, priced by --llm-prices) from the cash: "
        "a trading cost, in equity.csv's llm_cost_usd column",
    )
    participation_rest: Annotated[
        Literal["cancel", "carry"], Flag(help="{desc} (default {default})", group="broker")
    ] = Field("cancel", description="the unfilled rest of a capped order: cancelled, or placed again the next day")
    fill: Annotated[
        Literal["close", "next_open"],
        BeforeValidator(lambda v: v.replace("-", "_") if isinstance(v, str) else v),  # the flag's next-open too
        Flag(
            choices=("close", "next-open"),
            read=lambda v: v.replace("-", "_"),
            help="fill at the decision close (default) or the next open",
            group="broker",
        ),
    ] = "close"
    cash_buffer: float = Field(0.0, ge=0, lt=1)

    @property
    def sets_a_cost(self) -> bool:
        """Whether it charges anything (commission, slippage, a borrow fee) or caps fills: then the tables
        say what the costs took; without, every file is written as before costs existed."""
        return self.participation is not None or not Costs(self.commission, self.slippage, None, self.borrow).default

    @model_serializer(mode="wrap")
    def _no_fee_as_before(self, handler: Any) -> Any:
        """Without a borrow fee the broker is written as before the field existed: a default run's
        config.yaml, an experiment's identity and a journal's plan stay what an older fincon wrote, so
        a directory it wrote is resumed by its own command (not refused as another config)."""
        data = handler(self)
        if isinstance(data, dict) and not self.borrow:
            data.pop("borrow", None)
        return data

    @model_validator(mode="before")
    @classmethod
    def _models(cls, data: Any) -> Any:
        """A cost mapping without ``model`` is the percent model's; the flat
        keys of fincon before schema 3 are refused in one line saying how to
        write them; a fill rest without a fill cap is an error."""
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        flat = [k for k in FLAT_COST_KEYS if k in data] + [
            k for k in ("commission", "slippage") if isinstance(data.get(k), (int, float))
        ]
        if flat:
            raise ValueError(
                f"{flat[0]} is the flat cost layout of an older fincon; write the cost models as mappings: "
                "commission: {model: percent, rate: 0.001} or {model: per-share, per_share: 0.005, min: 1, max: 0.01}, "
                "slippage: {model: percent, fraction: 0.0005} or {model: bps, bps: 5} (docs/engine.md)"
            )
        for key in ("commission", "slippage"):
            if isinstance(data.get(key), Mapping) and "model" not in data[key]:
                data[key] = {"model": "percent", **data[key]}
        if data.get("participation") is None and data.get("participation_rest", "cancel") != "cancel":
            raise ValueError(
                "broker.participation_rest applies to a participation cap; set broker.participation (e.g. 0.025) "
                "or drop broker.participation_rest"
            )
        return data


#: the broker keys of the flat cost layout (fincon before schema 3), named in the refusal
FLAT_COST_KEYS = ("commission_model", "commission_per_share", "commission_min", "commission_max", "slippage_model")


class MetricsConfig(Section):
    alpha: Annotated[float, Flag(help="VaR/CVaR tail probability (default {default:g})", group=OUTPUT)] = Field(
        0.05, gt=0, lt=0.5, description="tail probability of VaR/CVaR"
    )
    risk_free: Annotated[float, Flag(help="{desc} (default {default:g})", group=OUTPUT)] = Field(
        0.0, ge=-0.1, lt=0.5, description="annual risk-free rate for Sharpe/Sortino"
    )
    days_per_year: int | None = Field(
        None,
        ge=200,
        le=366,
        description="sessions per year for annualising Sharpe, Sortino and volatility; default: the data's "
        "calendar: 365 when the bars the run's tickers share include weekends, else 252",
    )


def typed_strategy_params(v: Any) -> dict[str, BaseModel]:
    """``strategy_params`` as ``{name: params model}``; a bad key or value is
    a :class:`ConfigError` that names ``strategy_params.NAME.KEY``."""
    if not isinstance(v, Mapping):
        raise ConfigError("config: strategy_params must map a strategy's name to its parameters")
    return {str(name): validate_params(str(name), p) for name, p in v.items()}


def params_as_set(params: Mapping[str, BaseModel]) -> dict[str, Any]:
    """Each strategy's parameters as the keys that were set (YAML values):
    a config read back from its dump validates to the same models."""
    return {name: p.model_dump(mode="json", exclude_unset=True) for name, p in params.items()}


#: ``strategy_params`` of a run or experiment config: ``{name: params model}``,
#: validated when the config loads and written back as the keys that were set
StrategyParams = Annotated[
    dict[str, SerializeAsAny[BaseModel]],
    BeforeValidator(typed_strategy_params),
    PlainSerializer(params_as_set),
]


class RunSections(Section):
    """What a backtest and an experiment both say about their runs: the
    tickers, each strategy's parameters, the model, the data, the broker and
    the metrics. :class:`RunConfig` is one run; an experiment
    (fincon.workflow.experiment_config.ExperimentConfig) composes the same
    sections with its windows, repeats and ablations, and builds each unit's
    RunConfig from them, so neither re-declares the other's fields."""

    tickers: Annotated[
        list[str],
        Flag(
            "--ticker",
            "--tickers",
            parse=str,
            metavar="T[,T...]",
            help="ticker, or comma-separated tickers for a portfolio (default TSLA)",
            group=WHAT,
        ),
    ] = Field(default_factory=lambda: [DEFAULT_TICKER])
    strategy_params: StrategyParams = Field(
        default_factory=dict,
        description="each strategy's parameters, validated into its params model (a baseline's Params, "
        "the team's FinConParams, the LLM trader's LLMSettings); written back as the keys set",
    )
    llm: LLMSettings = Field(
        default_factory=LLMSettings,
        description="LLM settings for strategies that call a model (fincon.llm.settings.LLMSettings); "
        "the keys set here, over each strategy's own defaults",
    )
    data: Annotated[DataConfig, Flag(prefix="--")] = Field(default_factory=DataConfig)
    broker: Annotated[BrokerConfig, Flag(prefix="--")] = Field(default_factory=BrokerConfig)
    metrics: Annotated[MetricsConfig, Flag(prefix="--")] = Field(default_factory=MetricsConfig)

    @field_validator("tickers")
    @classmethod
    def _tickers(cls, v: list[str]) -> list[str]:
        out = [symbol(t) for t in v if t.strip()]
        if not out:
            raise ValueError("at least one ticker is needed")
        return once(out)

    @field_serializer("llm")
    def _llm_as_set(self, llm: LLMSettings) -> dict[str, Any]:
        # the keys the config sets, not every default: a strategy that calls a
        # model fills the rest with its own defaults (the team's larger context
        # and answer cap), so the defaults of the bare settings would be wrong
        # in config.yaml and would override the strategy's if read back
        out = llm.model_dump(mode="json", exclude_unset=True)
        if llm.anonymize:  # what a masked item showed: the leakage audit replays it (absent: topics, before)
            out.setdefault("mask_items", llm.mask_items)
        return out

    def sections(self) -> dict[str, Any]:
        """These sections, typed: what a unit's RunConfig is built from."""
        return {k: getattr(self, k) for k in RunSections.model_fields}


class RunConfig(RunSections):
    start: Annotated[IsoDate, Flag(help="first trading day, YYYY-MM-DD (default {default})", group=WHAT)] = dt.date(
        2022, 10, 5
    )
    end: Annotated[IsoDate, Flag(help="last trading day, YYYY-MM-DD (default {default})", group=WHAT)] = dt.date(
        2023, 6, 9
    )
    strategies: Annotated[
        list[str],
        Flag(
            "--strategy",
            "--strategies",
            parse=str,
            metavar="NAME[,NAME...]",
            help="one or more strategies (`fincon backtest --help` lists them; default buy-and-hold); NAME@LABEL "
            "is a second NAME with its own --param NAME@LABEL.KEY=VALUE (fincon@rules beside fincon)",
            group=WHAT,
        ),
    ] = Field(default_factory=lambda: ["buy-and-hold"])
    benchmark: Annotated[bool, Flag("--no-benchmark", const=False, help="do not add buy-and-hold", group=WHAT)] = Field(
        True, description="also run buy-and-hold on the same window"
    )

    @field_validator("strategies")
    @classmethod
    def _strategies(cls, v: list[str]) -> list[str]:
        out = [s.strip() for s in v if s.strip()]
        if not out:
            raise ValueError("at least one strategy is needed")
        return once(out, " (two runs of one are two names: {first}@a)")

    @model_validator(mode="after")
    def _window(self):
        if self.start > self.end:
            raise ValueError(f"start {self.start} is after end {self.end}")
        return self

    def params(self, name: str) -> dict[str, Any]:
        """The parameters this config sets for strategy ``name``, as YAML
        values (empty when it sets none): what a caller edits before
        :meth:`with_params` validates the result again."""
        p = self.strategy_params.get(name)
        return {} if p is None else p.model_dump(mode="json", exclude_unset=True)

    def with_params(self, name: str, params: Mapping[str, Any] | BaseModel) -> "RunConfig":
        """A copy with strategy ``name``'s parameters replaced, validated
        (``model_copy`` alone would store an unchecked mapping)."""
        return self.model_copy(
            update={"strategy_params": {**self.strategy_params, name: validate_params(name, params)}}
        )

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=True)


def _set_path(tree: dict, dotted: str, value: Any) -> None:
    node = tree
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ConfigError(f"cannot set {dotted}: {p} is not a section")
    node[parts[-1]] = value


def name_flags(message: str, flags: Mapping[str, str] | None) -> str:
    """``message`` with each config key the user set by a flag named as that
    flag (``broker.commission_per_share`` -> ``--commission-per-share``): an
    error names what the user typed, not fincon's internal keys."""
    if not flags:
        return message
    hit = False
    for key in sorted(flags, key=len, reverse=True):
        # the key as a whole word (not inside another key or word: "start" in "restart")
        pattern = re.compile(rf"(?<![\w.-]){re.escape(key)}(?=[:\s;,)']|$)")
        message, n = pattern.subn(lambda _m, f=flags[key]: f, message)
        hit = hit or n > 0
    if hit:
        message = re.sub(r"^(?:experiment )?config: ", "", message)
        message = re.sub(r"^[a-z_]+: (?=.*--)", "", message)  # the section's name, when a flag is named
    return message


def load_config(
    path: Path | None = None, overrides: dict[str, Any] | None = None, flags: Mapping[str, str] | None = None
) -> RunConfig:
    """Read ``path`` (YAML), apply dotted ``overrides`` and validate.
    ``flags`` maps the override keys the user gave as flags to those flags,
    so an error names the flag (``--events``), not the key."""
    try:
        return _load_config(path, overrides)
    except ConfigError as exc:
        raise ConfigError(name_flags(str(exc), flags)) from None


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, a date-shaped value that is no date (``2022-13-45``) a YAML error with its
    line (PyYAML raises a bare ValueError from its constructor)."""

    def construct_yaml_timestamp(self, node: yaml.Node) -> Any:  # type: ignore[override]
        try:
            return super().construct_yaml_timestamp(node)  # type: ignore[arg-type]
        except ValueError as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"{node.value} is not a calendar date ({exc}; YYYY-MM-DD)", node.start_mark
            ) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """A key given twice in one mapping is refused with its line: PyYAML keeps the last, silently."""
        seen: list[Any] = []  # a list: a key may be unhashable (a YAML sequence)
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *base": merged below, its keys overridable
                continue  # (constructed here, it was PyYAML's "could not determine a constructor")
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key} is given twice (the last would replace the first)", key_node.start_mark
                )
            seen.append(key)
        return super().construct_mapping(node, deep=deep)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` where a date that is no date is a ``yaml.YAMLError`` (:class:`_Loader`)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader)


def read_yaml(path: Path | str, what: str = "config") -> dict[str, Any]:
    """A YAML file's top-level mapping (empty for an empty file); a file that
    is not UTF-8 YAML text, or whose top is not a mapping, is one line naming
    it as ``what``. The one reader of every config (run, experiment, train)
    and of the LLM price table."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(
            f"{what} {path} is not UTF-8 text (a binary file, or another encoding such as "
            "Latin-1); save it as UTF-8 YAML"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    if "\x00" in text:
        raise ConfigError(f"{what} {path} is a binary file, not YAML text")
    try:
        loaded = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        problem = exc.problem if isinstance(exc, yaml.constructor.ConstructorError) else "not valid YAML"
        raise ConfigError(f"{what} {path}{where}: {problem}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{what} {path}: the top level must be a mapping of keys")
    return loaded


def _load_config(path: Path | None = None, overrides: dict[str, Any] | None = None) -> RunConfig:
    tree: dict[str, Any] = read_yaml(path) if path is not None else {}
    for key, value in (overrides or {}).items():
        if value is not None:
            _set_path(tree, key, value)
    llm = tree.pop("llm", None)
    try:
        cfg = RunConfig(**tree)
    except ValidationError as exc:
        raise ConfigError("config: " + format_validation_error("", exc, RunConfig)) from None
    if llm is None:
        return cfg
    # the llm section apart, with its own messages ("config: llm.temperature: ...");
    # its key checks raise ConfigError themselves, without repeating the value
    if not isinstance(llm, dict):
        raise ConfigError("config: llm must be a mapping of LLM settings (docs/llm.md), not a single value")
    try:
        settings = LLMSettings.model_validate(llm)
    except ValidationError as exc:
        raise ConfigError("config: " + format_validation_error("llm", exc, LLMSettings)) from None
    return cfg.model_copy(update={"llm": settings})
