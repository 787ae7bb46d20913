"""The flag groups that several commands share, each declared once and read back once.

Why: ``fincon backtest``, ``train``, ``experiment`` and ``forward init``
take the same tickers, data, team and LLM flags. Every one of them is made
from the field it sets (:mod:`fincon.cli.flags`): the run config's
(``RunConfig``: tickers, window, data, metrics), the team's
(``FinConParams``), the model's (``LLMSettings``) and the experiment's; here
are the few things around them a command needs: ``--param``, the run config
built from what was given, and the flag an error names.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Annotated, Any, Mapping

import yaml
from pydantic import Field

from fincon.agents.team.params import FinConParams
from fincon.cli.args import LEDGER_HELP
from fincon.cli.flags import Args, add, given, names
from fincon.config import OUTPUT, WHAT, DataConfig, RunConfig, load_config, load_yaml, name_flags
from fincon.errors import ConfigError, FinconError
from fincon.flag import Flag, absolute
from fincon.llm.settings import LLMSettings

# -- what to run ----------------------------------------------------------------------------


class RunArgs(Args):
    """The flags of every command that runs strategies (backtest, train, experiment, forward init)
    that no config model holds; a command says its own help of one with ``add(..., helps=...)``."""

    config: Annotated[Path | None, Flag(help="YAML config; flags override it", group=WHAT)] = None
    param: Annotated[
        list[str],
        Flag(
            repeat=True,
            metavar="STRATEGY.KEY=VALUE",
            help="strategy parameter, repeatable (value parsed as YAML)",
            group=WHAT,
        ),
    ] = Field(default_factory=list)
    ledger: Annotated[str | None, Flag(metavar="PATH|off", help=LEDGER_HELP, group=OUTPUT)] = None
    out: Annotated[str | None, Flag(metavar="DIR", help="where the results go", group=OUTPUT)] = None
    as_json: Annotated[bool, Flag("--json", help="print the results as JSON instead of a table", group=OUTPUT)] = False
    no_progress: Annotated[bool, Flag(help="hide the progress bars", group=OUTPUT)] = False


def parse_params(items: list[str]) -> dict[str, dict[str, Any]]:
    """``["markowitz.lookback=60"]`` -> ``{"markowitz": {"lookback": 60}}`` (values parsed as YAML)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        name, dot, field = key.rpartition(".")
        if not sep or not dot or not name or not field:
            raise ConfigError(f"--param {item!r}: expected STRATEGY.KEY=VALUE, e.g. markowitz.lookback=60")
        if not raw.strip():  # read as null, which the config drops: the default ran, unsaid
            raise ConfigError(f"--param {item!r} gives no value; give one, or drop the --param for the default")
        if field in out.get(name, {}):
            raise ConfigError(f"--param {key} is given twice; give it once")
        try:
            value = load_yaml(raw)
        except yaml.YAMLError:
            value = raw
        out.setdefault(name, {})[field] = value
    return out


def as_typed(message: str, args: argparse.Namespace) -> str:
    """``message`` with each team setting the user gave as a flag named as that flag: a check made as
    the run starts names its config key (``strategy_params.fincon.events: ...`` of ``--events``)."""
    flags = names(FinConParams)
    try:
        typed = given(args, FinConParams)
    except FinconError:  # a value the flag's reader refuses: its error was said already
        return message
    return name_flags(message, {f"{at}{k}": flags[k] for k in typed for at in ("strategy_params.fincon.", "team.")})


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
    parsed = params_beside(team, params)
    for name, values in parsed.items():
        overrides.update({f"strategy_params.{name}.{key}": value for key, value in values.items()})
    flagged = {key: flag_of(key) for key, value in overrides.items() if value is not None}
    flagged.update({key: flag_of(key) for key in named})
    cfg = load_config(config, {**overrides, **(fixed or {})}, flagged)
    _flags_reach_every_model(cfg, {k: v for k, v in llm.items() if v is not None})
    return cfg


def params_beside(team: Mapping[str, Any], params: list[str]) -> dict[str, dict[str, Any]]:
    """The ``--param`` items, parsed; one that contradicts a team flag is refused (--brain rules beside
    --param fincon.brain=llm ran the model: the --param won, unsaid)."""
    parsed = parse_params(params)
    for key, value in team.items():
        given_ = (parsed.get("fincon") or {}).get(key, value)
        if value is not None and given_ != value and absolute(str(given_)) != absolute(str(value)):  # a path as typed
            raise ConfigError(f"{_typed(f'strategy_params.fincon.{key}', value)} and --param "
                              f"fincon.{key}={_said(given_)} disagree; give one")  # fmt: skip
    return parsed


def _said(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _typed(key: str, value: Any) -> str:
    """What the user typed for config ``key``: a switch alone (--no-cvar), else the flag and its value."""
    return flag_of(key) if isinstance(value, bool) else f"{flag_of(key)} {value}"


def _flags_reach_every_model(cfg: RunConfig, llm: Mapping[str, Any]) -> None:
    """A strategy's own LLM settings win over the run's (fincon.llm.settings.layered): an --llm-* flag a
    strategy's own key contradicts would change nothing for it, said nowhere (--anonymize asked, the
    config's strategy_params.llm-trader.anonymize=false ran it unmasked). Refused in one line."""
    for name in cfg.strategies:
        flat = name.partition("@")[0] == "llm-trader"  # its params are LLM settings themselves
        own = cfg.params(name) if flat else cfg.params(name).get("llm") or {}
        for key, value in llm.items():
            if key in own and own[key] != value and absolute(str(own[key])) != absolute(str(value)):  # a path as typed
                where = f"strategy_params.{name}.{'' if flat else 'llm.'}{key}"
                raise ConfigError(
                    f"{_typed(f'llm.{key}', value)} and {where}={_said(own[key])} disagree (the "
                    "strategy's own setting would win); give one"
                )


#: the closing paragraph of backtest's, train's and experiment's --help
TRANSCRIPTS = """Transcripts: the team hears earnings calls through Whisper (rules brain
too) and caches the transcripts outside the run directory (--out), in
$FINCON_CACHE_DIR/transcripts/ (default ~/.cache/fincon/transcripts/).
Move it with FINCON_CACHE_DIR=DIR or --param fincon.transcript_cache=DIR;
clear it with `rm -r ~/.cache/fincon/transcripts` (docs/information.md).
"""


@functools.cache
def run_flags() -> dict[str, str]:
    """A run config's keys and the flags that set them (made once: every error and override reads it)."""

    return {
        **names(RunConfig),
        **names(FinConParams, under="strategy_params.fincon."),
        **names(LLMSettings, under="llm.", prefix="--llm-"),
    }


def flag_of(key: str, known: Mapping[str, str] | None = None) -> str:
    """The flag that sets config ``key``: in ``known`` (default: a run config's,
    :func:`run_flags`), else a strategy parameter set with --param is named as
    that --param, and any other key is ``--`` and its last part
    (``broker.slippage`` is ``--slippage``)."""
    known = run_flags() if known is None else known
    if key in known:
        return known[key]
    if key.startswith("strategy_params."):
        return "--param " + key[len("strategy_params.") :]
    return "--" + key.rsplit(".", 1)[-1].replace("_", "-")


# -- data -----------------------------------------------------------------------------------

DATA = ("data.source", "data.dir", "data.cache_dir")


def add_data(parser: argparse.ArgumentParser) -> None:
    """The ``data`` group: ``--source``, ``--data``, ``--cache-dir`` (the run config's ``data:``)."""
    add(parser, RunConfig, *DATA)


def data_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The data flags as config keys (None: not given); ``--data`` implies the csv source."""
    out: dict[str, Any] = dict.fromkeys(DATA)
    out.update(given(args, RunConfig, *DATA))
    if out["data.dir"] and not out["data.source"]:
        out["data.source"] = "csv"
    return out


def check_data_flags(args: argparse.Namespace, data: DataConfig) -> None:
    """A data flag the run would not read is an error (one line), never dropped."""
    if args.data is not None and args.source not in (None, "csv"):
        raise ConfigError(
            f"--source {args.source} does not read --data {args.data} (that is a folder of prices): drop one of them"
        )
    if args.cache_dir is not None and data.source != "yfinance":
        raise ConfigError("--cache-dir is the yfinance download cache: add --source yfinance or drop --cache-dir")


# -- the agent team -------------------------------------------------------------------------


def add_team(parser, *keys: str) -> None:
    """The team's flags of ``FinConParams``' fields ``keys``, in that order."""

    add(parser, FinConParams, *keys)


def team_values(args: argparse.Namespace, *keys: str) -> dict[str, Any]:
    """The team flags of ``keys`` that were given, as ``FinConParams`` keys and values."""

    return given(args, FinConParams, *keys)
