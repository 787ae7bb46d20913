"""The ``broker`` flag group of ``fincon backtest``: cash, the cost models, the fill cap and fills,
each built from the model field it sets (fincon.cli.flags.field_flag), and read back into the
config's ``broker`` section as the cost models' mappings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Mapping

from pydantic import ValidationError

from fincon.cli.args import number
from fincon.cli.flags import add, bounds_of, field_flag, given
from fincon.config import BrokerConfig, RunConfig, read_yaml
from fincon.engine.costs import COMMISSIONS, SLIPPAGES
from fincon.errors import ConfigError

#: the commission flags: dest -> (the model whose field it sets, the field, its metavar)
COMMISSION_FLAGS = {
    "commission": ("percent", "rate", "RATE"),
    "commission_per_share": ("per-share", "per_share", "USD"),
    "commission_min": ("per-share", "minimum", "USD"),
    "commission_max": ("per-share", "maximum", "FRAC"),
}


def _slippage_range() -> dict[str, Any]:
    """--slippage's range: the widest of the models it is the number of (bps: below 1000)."""
    ranges = [bounds_of(m.model_fields[m.number]) for m in SLIPPAGES.values()]
    low = min(ranges, key=lambda r: r["lo"])
    high = max(ranges, key=lambda r: r["hi"])
    return {"lo": low["lo"], "lo_open": low["lo_open"], "hi": high["hi"], "hi_open": high["hi_open"]}


#: the broker's fields with a flag of their own (the cost models' flags are below)
FIELDS = ("broker.participation", "broker.borrow", "broker.charge_llm", "broker.participation_rest", "broker.fill")


def add_broker(parser: argparse.ArgumentParser) -> None:
    """The ``broker`` group: cash, the cost models, the fill cap, fills."""
    add(parser, RunConfig, "broker.cash")
    b = parser.__dict__["_fincon_groups"]["broker"]
    b.add_argument(
        "--commission-model",
        choices=list(COMMISSIONS),
        help="percent of value (default, --commission), per share with a minimum and a maximum per "
        "order (--commission-per-share, --commission-min, --commission-max), or zero",
    )
    for dest, (model, field, metavar) in COMMISSION_FLAGS.items():
        field_flag(
            b,
            COMMISSIONS[model],
            field,
            "--" + dest.replace("_", "-"),
            metavar=metavar,
            help=f"{model}: {{desc}}, e.g. 0.001 (default {{default:g}})"
            if dest == "commission"
            else f"{model}: {{desc}}; default {{default:g}}",
        )
    readings = "; ".join(
        f"{name}: {m.model_fields[m.number].description} (below {bounds_of(m.model_fields[m.number])['hi']:g})"
        for name, m in SLIPPAGES.items()
    )
    b.add_argument(
        "--slippage",
        type=number(float, **_slippage_range()),
        help=f"e.g. 0.0005 (default 0), as --slippage-model reads it: {readings}",
    )
    b.add_argument("--slippage-model", choices=list(SLIPPAGES), help="how --slippage reads (default percent)")
    add(parser, RunConfig, *FIELDS)


def broker_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The broker flags as config keys (None: not given). A cost flag sets a
    field of the model in force: ``--commission-model`` / ``--slippage-model``,
    else the config file's, else percent; the file's other settings of that
    model are kept. A flag its model does not read is one line, never dropped."""
    section = _file_broker(args.config)
    commission = {dest: getattr(args, dest) for dest in COMMISSION_FLAGS if getattr(args, dest) is not None}
    slippage = {} if args.slippage is None else {"slippage": (None, None, args.slippage)}
    in_file = (section.get("slippage") or {}) if isinstance(section.get("slippage"), Mapping) else {}
    if slippage and args.slippage_model is None and in_file.get("model", "percent") != "percent":
        # read as the file's model's number, as designed, but said: 0.0005 was 5 bp alone and 0.0005 bp
        # beside a bps config, unsaid
        m = in_file["model"]
        print(
            f"fincon: warning: --slippage {args.slippage:g} reads as the config file's slippage model, {m} (not "
            f"as the default percent's fraction); --slippage-model {m} says so and silences this",
            file=sys.stderr,
        )
    return {
        "broker.commission": _cost_model(
            "commission", COMMISSIONS, args.commission_model, section.get("commission"),
            {dest: (COMMISSION_FLAGS[dest][0], COMMISSION_FLAGS[dest][1], v) for dest, v in commission.items()},
        ),
        "broker.slippage": _cost_model(
            "slippage", SLIPPAGES, args.slippage_model, section.get("slippage"),
            slippage,
        ),
        **given(args, RunConfig, "broker.cash", *FIELDS),
    }  # fmt: skip


def _file_broker(config: Path | None) -> Mapping[str, Any]:
    """The config file's ``broker`` section (empty without a file or section; a bad file is the config's error)."""
    if config is None:
        return {}
    try:
        section = read_yaml(config).get("broker")
    except ConfigError:
        return {}
    return section if isinstance(section, Mapping) else {}


def _cost_model(
    kind: str,
    models: Mapping[str, Any],
    model_flag: str | None,
    in_file: Any,
    values: Mapping[str, tuple[str | None, str | None, Any]],
) -> dict[str, Any] | None:
    """The ``kind`` model's mapping the flags give (None: no flag of it given): the
    model in force with the file's settings of it and each flag's field. ``values``
    maps a flag's dest to (the model it belongs to, or None: any; its field, or
    None: the model's one number; its value)."""
    if model_flag is None and not values:
        return None
    spec = dict(in_file) if isinstance(in_file, Mapping) else {}
    source = "the config file's" if spec.get("model") else "the default"
    name = model_flag or spec.get("model") or "percent"
    if spec.get("model", "percent") != name:
        spec = {}
    model = models.get(name)
    if model is None:  # the file names a model that is not one: the config's own error says so
        return None
    spec["model"] = name
    try:  # the file's settings by their field names (a flag's field beside the file's alias would be two)
        spec = model.model_validate(spec).model_dump()
    except ValidationError:
        pass  # the merged mapping's check below names it
    for dest, (owner, field, value) in values.items():
        flag = "--" + dest.replace("_", "-")
        if owner is not None and owner != name:
            hint = " (the price a share is --commission-per-share)" if name == "per-share" else ""
            if model_flag is not None:
                raise ConfigError(
                    f"{flag} sets the {owner} model; --{kind}-model {name} does not read it: drop {flag}{hint}"
                )
            raise ConfigError(
                f"{flag} sets the {owner} model; this run's {kind} model is {name} ({source}): "
                f"add --{kind}-model {owner} or drop {flag}{hint}"
            )
        spec[field or model.number] = value
    try:
        model.model_validate(spec)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][-1]) if err["loc"] else ""
        flags = [f"--{d.replace('_', '-')}" for d, (_o, f, _v) in values.items() if (f or model.number) == field]
        what = f"{flags[0]} {spec[field]}" if flags else f"broker.{kind}.{field}"
        raise ConfigError(f"{what}: {err['msg']} (the {name} {kind} model)") from None
    return spec


def check_broker_flags(args: argparse.Namespace, broker: BrokerConfig) -> None:
    """A broker flag the run would not read is an error (one line), never dropped."""
    if args.participation_rest is not None and broker.participation is None:
        raise ConfigError("--participation-rest applies to a participation cap: add --participation (e.g. 0.025)")
