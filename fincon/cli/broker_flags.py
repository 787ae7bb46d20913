"""The ``broker`` flag group of ``fincon backtest``: cash, the cost models' short forms, the fill
cap and fills, each built from the cost model's field it sets (fincon.cli.flags.field_flag), and
read back into the config's ``broker`` section."""

from __future__ import annotations

import argparse
from typing import Any

from fincon.cli.args import number
from fincon.cli.flags import add, bounds_of, field_flag, given
from fincon.config import BrokerConfig, RunConfig
from fincon.engine.costs import COMMISSION_SHORT, COMMISSIONS, SLIPPAGE_FIELD, SLIPPAGES
from fincon.errors import ConfigError

#: the short forms' metavars (--commission has argparse's own)
_COMMISSION_METAVARS = {"commission_per_share": "USD", "commission_min": "USD", "commission_max": "FRAC"}


def _slippage_range() -> dict[str, Any]:
    """--slippage's range: the widest of the models it is the number of (bps: below 1000)."""
    ranges = [bounds_of(SLIPPAGES[m].model_fields[f]) for m, f in SLIPPAGE_FIELD.items()]
    low = min(ranges, key=lambda r: r["lo"])
    high = max(ranges, key=lambda r: r["hi"])
    return {"lo": low["lo"], "lo_open": low["lo_open"], "hi": high["hi"], "hi_open": high["hi_open"]}


#: the broker's fields with a flag of their own (the cost models' short forms are below)
FIELDS = ("broker.participation", "broker.charge_llm", "broker.participation_rest", "broker.fill")


def add_broker(parser: argparse.ArgumentParser) -> None:
    """The ``broker`` group: cash, the cost models' short forms, the fill cap, fills."""
    add(parser, RunConfig, "broker.cash")
    b = parser.__dict__["_fincon_groups"]["broker"]
    short = dict(COMMISSION_SHORT)
    model, field = short.pop("commission")
    field_flag(b, COMMISSIONS[model], field, "--commission", help="{desc}, e.g. 0.001 (default {default:g})")
    b.add_argument(
        "--commission-model",
        choices=list(COMMISSIONS),
        help="percent of value (default, --commission), per share with a minimum and a maximum per "
        "order (--commission-per-share, --commission-min, --commission-max), or zero",
    )
    for key, (model, field) in short.items():
        field_flag(
            b,
            COMMISSIONS[model],
            field,
            "--" + key.replace("_", "-"),
            metavar=_COMMISSION_METAVARS[key],
            help=f"{model}: {{desc}}; default {{default:g}}",
        )
    readings = "; ".join(
        f"{m}: {SLIPPAGES[m].model_fields[f].description} (below {bounds_of(SLIPPAGES[m].model_fields[f])['hi']:g})"
        for m, f in SLIPPAGE_FIELD.items()
    )
    b.add_argument(
        "--slippage",
        type=number(float, **_slippage_range()),
        help=f"e.g. 0.0005 (default 0), as --slippage-model reads it: {readings}",
    )
    b.add_argument("--slippage-model", choices=list(SLIPPAGE_FIELD), help="how --slippage reads (default percent)")
    add(parser, RunConfig, *FIELDS)


def broker_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The broker flags as config keys (None: not given): the cost models' short forms."""
    return {
        "broker.commission": args.commission,
        "broker.slippage": args.slippage,
        "broker.commission_model": args.commission_model,
        **{f"broker.{key}": getattr(args, key) for key in COMMISSION_SHORT if key != "commission"},
        "broker.slippage_model": args.slippage_model,
        **given(args, RunConfig, "broker.cash", *FIELDS),
    }


def check_broker_flags(args: argparse.Namespace, broker: BrokerConfig) -> None:
    """A broker flag the run would not read is an error (one line), never
    dropped: the config catches settings that differ from their defaults;
    this catches a flag given at its default value too."""
    for key, (owner, _field) in COMMISSION_SHORT.items():
        flag = "--" + key.replace("_", "-")
        if key != "commission" and getattr(args, key) is not None and broker.commission_model != owner:
            raise ConfigError(
                f"{flag} applies to --commission-model {owner} (this run's commission model is "
                f"{broker.commission_model}); add --commission-model {owner} or drop {flag}"
            )
    if args.commission is not None and broker.commission_model != "percent":
        raise ConfigError(
            f"--commission is the percent model's rate; --commission-model {broker.commission_model} does not "
            "read it: drop --commission"
            + (" (the price a share is --commission-per-share)" if broker.commission_model == "per-share" else "")
        )
    if args.participation_rest is not None and broker.participation is None:
        raise ConfigError("--participation-rest applies to a participation cap: add --participation (e.g. 0.025)")
