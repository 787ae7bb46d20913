"""The flag groups that several commands share, each declared once and read back once.

Why: ``fincon backtest``, ``train`` and ``experiment`` each declared
``--ticker``, ``--param``, the data flags and the team flags by hand; their
help drifted apart, and ``train`` faked defaults for backtest's broker and
metrics flags so that backtest's config builder could read a namespace that
did not have them. Here a group is added by one function (:func:`add_data`,
:func:`add_team`, :func:`add_broker`, ...) and read back by one
(:func:`data_overrides`, :func:`team_values`, :func:`broker_overrides`), so a
command's ``register`` declares only its own flags and hands a builder only
what it has.

A flag that sets one field of a config model is built from that field
(:func:`field_flag`): its help from the field's ``description``, its choices
from a ``Literal``, its range from ``ge``/``gt``/``le``/``lt`` through
:func:`fincon.cli.args.number`. The flag then refuses in argparse, in one
line naming it and the range, exactly what the model would refuse later,
and the two cannot drift apart.

Building the parser imports no numerical library (``fincon --help``
answers at once): the models read here (``fincon.config``,
``fincon.engine.costs``, ``fincon.workflow.experiment_config``) import
pydantic only. The team's ``FinConParams`` imports the analysts (and so
pandas): the team flags are declared by hand in :data:`TEAM`, and
``tests/test_cli_options.py`` checks their choices and ranges against it.
"""

from __future__ import annotations

import argparse
import types
import typing
from pathlib import Path
from typing import Any, Callable, Literal, NamedTuple, Sequence

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from fincon.cli.args import number
from fincon.config import DataConfig, RunConfig, load_config
from fincon.errors import ConfigError
from fincon.workflow.experiment_config import ExperimentConfig

# -- a flag from a model's field ------------------------------------------------------------


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X`` (a flag left out is None, not a value of the field)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kept = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(kept) == 1:
            return kept[0]
    return annotation


def choices_of(model: type[BaseModel], name: str) -> list[Any]:
    """The values a ``Literal`` field allows, in the model's order."""
    annotation = _unwrap(model.model_fields[name].annotation)
    if typing.get_origin(annotation) is not Literal:
        raise TypeError(f"{model.__name__}.{name} is not a Literal field")
    return list(typing.get_args(annotation))


def bounds_of(info: FieldInfo) -> dict[str, Any]:
    """A field's ``ge``/``gt``/``le``/``lt`` as :func:`fincon.cli.args.number`'s keywords."""
    out: dict[str, Any] = {"lo": None, "hi": None, "lo_open": False, "hi_open": False}
    for meta in info.metadata:
        for attr, end, is_open in (("ge", "lo", False), ("gt", "lo", True), ("le", "hi", False), ("lt", "hi", True)):
            value = getattr(meta, attr, None)
            if value is not None:
                out[end], out[f"{end}_open"] = value, is_open
    return out


def field_flag(
    group, model: type[BaseModel], name: str, *flags: str, help: str | None = None, **kwargs: Any
) -> argparse.Action:
    """Add ``flags``, which set ``model``'s field ``name``: a ``Literal`` gives
    the choices, a bounded int or float the type (finite, within the field's
    range), a bool a switch, a path ``Path``. ``help`` is a template of
    ``{desc}`` (the field's description) and ``{default}`` (its default);
    without it the description is the help. Keywords override what is derived."""
    info = model.model_fields[name]
    annotation = _unwrap(info.annotation)
    if typing.get_origin(annotation) is Literal:
        kwargs.setdefault("choices", choices_of(model, name))
    elif annotation is bool:
        kwargs.setdefault("action", "store_true")
    elif annotation in (int, float):
        kwargs.setdefault("type", number(annotation, **bounds_of(info)))
    elif annotation is Path:
        kwargs.setdefault("type", Path)
    desc = info.description or ""
    text = (help if help is not None else "{desc}").format(desc=desc, default=info.default)
    if not text:
        raise ValueError(f"{model.__name__}.{name} has no description: give {flags[0]} a help text")
    return group.add_argument(*flags, help=text.replace("%", "%%"), **kwargs)


def split(text: str | None, flag: str | None = None, choices: Sequence[str] | None = None) -> list[str] | None:
    """``A, B,C`` -> ``["A", "B", "C"]``; None when nothing is given. A flag
    given with nothing in it (``--placebo ''``) is an error naming ``flag``,
    never the default in silence; with ``choices`` an unknown item is one."""
    if text is None:
        return None
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items and flag is not None:
        hint = f": name one or more of {', '.join(choices)}" if choices else ""
        raise ConfigError(f"{flag} is empty{hint} (or leave the flag out for the default)")
    for x in items if choices is not None else ():
        if x not in choices:
            raise ConfigError(f"{flag} {x}: not one of {', '.join(choices)}")
    return items or None


def _absolute(text: str | Path) -> str:
    """Saved absolute, so a run's config.yaml works from any directory."""
    return str(Path(text).expanduser().absolute())


# -- what to run ----------------------------------------------------------------------------


def add_tickers(group) -> None:
    """``--ticker/--tickers`` (dest ``tickers``), read with :func:`split`."""
    group.add_argument(
        "--ticker",
        "--tickers",
        dest="tickers",
        metavar="T[,T...]",
        help="ticker, or comma-separated tickers for a portfolio (default TSLA)",
    )


def add_params(group, *, metavar: str, help: str) -> None:
    """``--param NAME.KEY=VALUE``, repeatable; :func:`parse_params` reads it."""
    group.add_argument("--param", action="append", default=[], metavar=metavar, help=help)


def parse_params(items: list[str]) -> dict[str, dict[str, Any]]:
    """``["markowitz.lookback=60"]`` -> ``{"markowitz": {"lookback": 60}}`` (values parsed as YAML)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        name, dot, field = key.rpartition(".")
        if not sep or not dot or not name or not field:
            raise ConfigError(f"--param {item!r}: expected STRATEGY.KEY=VALUE, e.g. markowitz.lookback=60")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        out.setdefault(name, {})[field] = value
    return out


# -- the run config ---------------------------------------------------------------------


def load_run_config(
    config: Path | None,
    flags: dict[str, Any],
    *,
    team: dict[str, Any],
    params: list[str],
    llm: dict[str, Any],
    fixed: dict[str, Any] | None = None,
    named: tuple[str, ...] = (),
) -> RunConfig:
    """A run config: ``config`` (YAML, or none) under the values the flags gave.

    ``flags`` maps config keys to what a flag gave (None: not given), ``team``
    the team flags' ``FinConParams`` values (``--candidates`` also sets the
    tickers when no flag did), ``params`` the ``--param`` items, ``llm`` the
    LLM flags (:func:`fincon.cli.llm.llm_overrides`); ``fixed`` what the
    command sets itself (train: the team alone, no benchmark). An error names
    the flag the user typed for each key given (and for the keys ``named``)."""
    overrides = dict(flags)
    if "candidates" in team and not overrides.get("tickers"):
        overrides["tickers"] = team["candidates"]
    overrides.update({f"llm.{key}": value for key, value in llm.items()})
    overrides.update({f"strategy_params.fincon.{key}": value for key, value in team.items()})
    for name, values in parse_params(params).items():
        overrides.update({f"strategy_params.{name}.{key}": value for key, value in values.items()})
    names = {key: flag_of(key) for key, value in overrides.items() if value is not None}
    names.update({key: flag_of(key) for key in named})
    return load_config(config, {**overrides, **(fixed or {})}, names)


#: config keys whose flag is not --KEY-WITH-DASHES
FLAG_NAMES = {
    "strategies": "--strategy",
    "data.dir": "--data",
    "benchmark": "--no-benchmark",
    "strategy_params.fincon.cvar": "--no-cvar",
    "strategy_params.fincon.critics": "--critics",
}


def flag_of(key: str) -> str:
    """The flag that sets config ``key`` (``broker.commission_min`` -> ``--commission-min``;
    a strategy parameter set with --param is named as that --param)."""
    if key in FLAG_NAMES:
        return FLAG_NAMES[key]
    if key.startswith("strategy_params.fincon."):
        return "--" + key.rsplit(".", 1)[1].replace("_", "-")
    if key.startswith("strategy_params."):
        return "--param " + key[len("strategy_params.") :]
    if key.startswith("llm."):
        return "--llm-" + key[4:].replace("_", "-")
    return "--" + key.rsplit(".", 1)[-1].replace("_", "-")


# -- output -------------------------------------------------------------------------------


def add_output(group, *, out: str, json: str) -> None:
    """``--out DIR`` (``out``: what the directory is), ``--json`` (``json``: what it prints), ``--no-progress``."""
    group.add_argument("--out", metavar="DIR", help=out)
    group.add_argument("--json", action="store_true", help=json)
    group.add_argument("--no-progress", action="store_true", help="hide the progress bars")


# -- data -----------------------------------------------------------------------------------


def add_data(parser: argparse.ArgumentParser) -> None:
    """The ``data`` group: ``--source``, ``--data``, ``--cache-dir`` (the run config's ``data:``)."""
    d = parser.add_argument_group("data")
    field_flag(
        d,
        DataConfig,
        "source",
        "--source",
        help="price source (default {default}: bundled, offline; csv implied by --data)",
    )
    field_flag(
        d,
        DataConfig,
        "dir",
        "--data",
        metavar="DIR",
        help="a dataset directory from `fincon data import` (its prices, events and calendar), or a "
        "directory of TICKER.csv files with Date,Open,High,Low,Close,Adj Close,Volume",
    )
    field_flag(d, DataConfig, "cache_dir", "--cache-dir", help="{desc}")


def data_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The data flags as config keys (None: not given); ``--data`` implies the csv source."""
    return {
        "data.source": args.source or ("csv" if args.data else None),
        "data.dir": _absolute(args.data) if args.data else None,
        "data.cache_dir": _absolute(args.cache_dir) if args.cache_dir else None,
    }


def check_data_flags(args: argparse.Namespace, data: DataConfig) -> None:
    """A data flag the run would not read is an error (one line), never dropped."""
    if args.data is not None and args.source not in (None, "csv"):
        raise ConfigError(
            f"--source {args.source} does not read --data {args.data} (that is a folder of prices): drop one of them"
        )
    if args.cache_dir is not None and data.source != "yfinance":
        raise ConfigError("--cache-dir is the yfinance download cache: add --source yfinance or drop --cache-dir")


# -- the agent team -------------------------------------------------------------------------


class TeamFlag(NamedTuple):
    """A team flag: what argparse gets, the ``FinConParams`` key it sets and
    how the flag's value becomes that key's (None: the flag was not given)."""

    flags: tuple[str, ...]
    key: str
    read: Callable[[Any], Any]
    kwargs: dict[str, Any]


def _given(value: Any) -> Any:
    return value


#: every team flag by its dest; a command adds the ones it reads (``add_team(group, "brain", ...)``)
TEAM: dict[str, TeamFlag] = {
    "brain": TeamFlag(
        ("--brain",),
        "brain",
        _given,
        {
            "choices": ["llm", "rules"],
            "help": "llm: every agent asks the model (default); rules: deterministic baseline, runs in seconds",
        },
    ),
    "events": TeamFlag(
        ("--events",),
        "events",
        lambda v: _absolute(v) if v and v != "sample" else v,
        {
            "metavar": "sample|DIR",
            "help": "event corpus the analysts read: the bundled synthetic sample (default) or a directory "
            "written by `fincon data sample` / in the event format of docs/information.md",
        },
    ),
    "candidates": TeamFlag(
        ("--candidates",),
        "candidates",
        split,
        {
            "metavar": "T[,T...]",
            "help": "portfolio: tickers the stock-selection analyst picks the traded pool from "
            "(sets --tickers when that is not given)",
        },
    ),
    "beliefs": TeamFlag(
        ("--beliefs",),
        "beliefs",
        lambda v: _absolute(v) if v else None,
        {
            "metavar": "FILE|RUN",
            "help": "start from learned investment beliefs and reflections: a beliefs.json or the run dir of "
            "`fincon train` (test stage: no belief learning, CVaR alerts stay on)",
        },
    ),
    "allow_overlap": TeamFlag(
        ("--allow-overlap",),
        "allow_overlap",
        lambda v: True if v else None,
        {
            "action": "store_true",
            "help": "accept --beliefs trained on a window that does not end before --start "
            "(lookahead: flagged in the summary and on stderr)",
        },
    ),
    "no_cvar": TeamFlag(
        ("--no-cvar",),
        "cvar",
        lambda v: False if v else None,
        {"action": "store_true", "help": "turn off the within-episode CVaR alert (the paper's ablation)"},
    ),
    "protocol": TeamFlag(
        ("--protocol",),
        "protocol",
        _given,
        {
            "metavar": "NAME",
            "help": "decision step after the analysts: fincon (the paper's manager, default); see "
            "docs/protocols.md for the others",
        },
    ),
    "samples": TeamFlag(
        ("--samples",),
        "samples",
        _given,
        {
            "type": number(int, 1, 9),
            "metavar": "N",
            "help": "protocols that sample several proposals (scm): how many per day (default 3)",
        },
    ),
    "critics": TeamFlag(
        ("--critics",),
        "critics",
        lambda v: v == "on",
        {
            "choices": ["on", "off"],
            "help": "numeric critics check the analysts' figures about filings and calls (default off)",
        },
    ),
}


def add_team(group, *names: str) -> None:
    """The team flags ``names`` (dests of :data:`TEAM`), in that order."""
    for name in names:
        flag = TEAM[name]
        group.add_argument(*flag.flags, dest=name, **flag.kwargs)


def team_values(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The team flags ``names`` that were given, as ``FinConParams`` keys and values."""
    out: dict[str, Any] = {}
    for name in names:
        flag, raw = TEAM[name], getattr(args, name)
        value = None if raw is None else flag.read(raw)
        if value is not None:
            out[flag.key] = value
    return out


# -- training -------------------------------------------------------------------------------

#: the training knobs train and experiment share (ExperimentConfig's fields, which
#: TrainOptions checks the same way), with their help
_TRAINING = {
    "episodes": ("--episodes", "training episodes K (default {default}, as in the paper)"),
    "explore": ("--explore", "rules brain: log-normal noise on the rules weights in episodes 2..K (default {default})"),
    "lr": ("--lr", "rules brain: weight step size, multiplied by 1 - tau (default {default})"),
}


def add_training(group, *names: str, defaults: bool) -> None:
    """The training knobs ``names`` (episodes, explore, lr); ``defaults``: the
    flag holds the default (train hands it on), else None (experiment: the
    config's value stands unless a flag is given)."""
    for name in names:
        flag, text = _TRAINING[name]
        default = ExperimentConfig.model_fields[name].default if defaults else None
        field_flag(group, ExperimentConfig, name, flag, help=text, default=default)
