"""Every flag from the typed model it sets: the one place argparse arguments are made.

A field says how it is spelled on the command line with a
:class:`fincon.flag.Flag` in its ``Annotated`` metadata; :func:`add` turns
the fields a command names into arguments and :func:`given` reads the given
ones back under the field's key (``llm.seed``, ``train.start``), so a flag's
name, help, range, choices and default are written once, on the field, and a
command's ``register`` says only which fields it has. The models are the
run's own (``RunConfig``, ``LLMSettings``, ``FinConParams``,
``ExperimentConfig``) and, for what only one command reads (an evaluation's
``--samples``), a small model of that command's arguments beside it.

Why our own generator and not pydantic-settings' CLI source: that source
spells nested fields ``--llm.backend`` and adds every field of a model,
where fincon's flags are documented as ``--llm-backend`` (a command takes a
chosen few), and a range is checked in argparse (:func:`fincon.cli.args.number`)
so a bad value is one line naming the flag before any work. The generator is
~150 lines; its rules are below.

From a field: a ``Literal`` gives the choices, a bool a switch, a bounded
int or float a finite number within the field's range, a ``Path`` a path,
a date an ISO date, a list ``nargs="+"`` of its item type. A flag's argparse
default is None ("not given": the config or the model's default stands)
unless the model is a command's own (:class:`Args`), whose defaults are the
flags'.
"""

from __future__ import annotations

import argparse
import datetime as dt
import enum
import types
import typing
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Literal, NamedTuple, Sequence

from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from fincon.cli.args import iso_date, number
from fincon.errors import ConfigError
from fincon.flag import Flag, FlagSpec, flag_of_field, names_of


class Args(BaseModel):
    """A command's own arguments (what no config model holds): their flags
    carry the fields' defaults, so the handler reads a value, never None."""

    model_config = ConfigDict(extra="forbid")


class Spec(NamedTuple):
    """One flag: the field's key under the model, its flags, argparse dest, field and Flag."""

    key: str
    names: tuple[str, ...]
    dest: str
    info: FieldInfo
    flag: FlagSpec
    default: Any


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X`` (a flag left out is None, not a value of the field)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kept = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(kept) == 1:
            return kept[0]
    return annotation


def _default(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return None if info.default is PydanticUndefined else info.default


def specs(model: type[BaseModel], *, key: str = "", prefix: str = "--", default: Any = None) -> Iterator[Spec]:
    """Every flag of ``model`` (a section field with ``Flag(prefix=...)``: its fields' flags), in field order."""
    for name, info in model.model_fields.items():
        flag = flag_of_field(info)
        if flag is None:
            continue
        value = getattr(default, name) if default is not None else _default(info)
        if flag.prefix is not None:
            sub = specs(_unwrap(info.annotation), key=f"{key}{name}.", prefix=flag.prefix, default=value)
            for spec in sub:  # a section's flags say which section (Window: "first {section} day")
                if "{section}" in spec.flag.help:
                    spec = spec._replace(flag=replace(spec.flag, help=spec.flag.help.replace("{section}", flag.help)))
                yield spec
            continue
        names = names_of(flag, name, prefix)
        dests = [n.lstrip("-").replace("-", "_") for n in names]
        dest = name if name in dests else dests[0]  # --ticker/--tickers: args.tickers
        yield Spec(key + name, names, dest, info, flag, value)


def select(model: type[BaseModel], keys: Sequence[str], prefix: str = "--") -> list[Spec]:
    """The flags of ``keys`` in that order (none: every flag of the model); an unknown key is a bug.
    ``prefix``: of a flag the field does not name (``--llm-`` for ``LLMSettings``)."""
    every = {s.key: s for s in specs(model, prefix=prefix)}
    if not keys:
        return list(every.values())
    missing = [k for k in keys if k not in every]
    if missing:
        raise KeyError(f"{model.__name__} has no flag for {missing[0]!r}")
    return [every[k] for k in keys]


def bounds_of(info: FieldInfo) -> dict[str, Any]:
    """A field's ``ge``/``gt``/``le``/``lt`` as :func:`fincon.cli.args.number`'s keywords."""
    out: dict[str, Any] = {"lo": None, "hi": None, "lo_open": False, "hi_open": False}
    for meta in info.metadata:
        for attr, end, is_open in (("ge", "lo", False), ("gt", "lo", True), ("le", "hi", False), ("lt", "hi", True)):
            value = getattr(meta, attr, None)
            if value is not None:
                out[end], out[f"{end}_open"] = value, is_open
    return out


def choices_of(annotation: Any) -> list[Any] | None:
    """The values a ``Literal`` or an Enum (or a list of one) allows, in order."""
    annotation = _unwrap(annotation)
    if typing.get_origin(annotation) is list:
        annotation = typing.get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [m.value for m in annotation]
    return list(typing.get_args(annotation)) if typing.get_origin(annotation) is Literal else None


def _parse(annotation: Any, info: FieldInfo) -> Any:
    """The argparse type of a field's values (None: text)."""
    if annotation is bool:
        return None
    if annotation in (int, float):
        return number(annotation, **bounds_of(info))
    if annotation is Path:
        return Path
    if annotation is dt.date:
        return iso_date
    return None


def kwargs_of(spec: Spec, *, fill: bool) -> dict[str, Any]:
    """argparse's keywords for ``spec`` (``fill``: the flag's default is the field's)."""
    info, flag = spec.info, spec.flag
    annotation = _unwrap(info.annotation)
    is_list = typing.get_origin(annotation) is list
    item = typing.get_args(annotation)[0] if is_list else annotation
    kw: dict[str, Any] = {}
    default = spec.default if fill else None
    if flag.const is not None:
        kw.update(action="store_const", const=flag.const)
    elif annotation is bool and flag.parse is None and flag.choices is None:
        kw.update(action="store_const", const=True)
        default = bool(default) if fill else None
    else:
        parse = flag.parse or _parse(item, info)
        if parse is not None:
            kw["type"] = parse
        choices = flag.choices if flag.choices is not None else (None if flag.parse else choices_of(annotation))
        if choices is not None:
            kw["choices"] = list(choices)
        if flag.repeat:
            kw["action"] = "append"
        elif flag.nargs or (is_list and flag.parse is None):
            kw["nargs"] = flag.nargs or "+"
        if flag.metavar or item is dt.date:
            kw["metavar"] = flag.metavar or "YYYY-MM-DD"
    desc = info.description or ""
    shown = spec.default.isoformat() if isinstance(spec.default, dt.date) else spec.default
    text = (flag.help or "{desc}").format(desc=desc, default=shown)
    if not text:
        raise ValueError(f"{spec.key} has no description: give {spec.names[0]} a help text")
    kw["help"] = text.replace("%", "%%")
    if spec.names[0].startswith("-"):
        kw["dest"] = spec.dest
        kw["default"] = default
        if flag.required:
            kw["required"] = True
    elif not (fill and spec.default is not None) and not flag.required:
        kw["nargs"] = "?" if "nargs" not in kw else "*"
    return kw


def add(
    parser: Any,
    model: type[BaseModel],
    *keys: str,
    fill: bool | None = None,
    prefix: str = "--",
    helps: dict[str, str | dict[str, Any]] | None = None,
) -> None:
    """The flags of ``model``'s fields ``keys`` (none: all), each in its
    Flag's help section (made once per title) or in ``parser`` itself;
    ``helps``: a command's own help of a key (what it alone can say), or its
    own argparse keywords (``{"help": ..., "metavar": ...}``)."""
    fill = issubclass(model, Args) if fill is None else fill
    is_parser = isinstance(parser, argparse.ArgumentParser)
    groups: dict[str, Any] = parser.__dict__.setdefault("_fincon_groups", {}) if is_parser else {}
    for spec in select(model, keys, prefix):
        title = spec.flag.group
        target = parser
        if title is not None and is_parser:
            if title not in groups:
                groups[title] = parser.add_argument_group(title)
            target = groups[title]
        kw = kwargs_of(spec, fill=fill)
        own = (helps or {}).get(spec.key)
        if own is not None:
            kw.update({"help": own} if isinstance(own, str) else own)
            kw["help"] = kw["help"].replace("%", "%%")
        target.add_argument(*spec.names, **kw)


def action(
    actions: Any,
    name: str,
    model: type[BaseModel],
    func: Any,
    *,
    help: str,
    description: str | None = None,
    epilog: str | None = None,
) -> argparse.ArgumentParser:
    """One action of a command that has several (``fincon data import``,
    ``fincon eval leakage``): its parser in ``actions`` (an ``add_subparsers``),
    the flags of ``model`` and the function it runs. An action with examples
    (``epilog``) prints its description and examples as written; one without
    a description of its own says its one-line ``help`` at the top of ``--help``."""
    description = description or f"{help[:1].upper()}{help[1:].rstrip('.')}."
    raw = {"formatter_class": argparse.RawDescriptionHelpFormatter} if epilog else {}
    p = actions.add_parser(name, help=help, description=description, epilog=epilog, **raw)
    add(p, model)
    p.set_defaults(func=func)
    return p


def given(
    args: argparse.Namespace, model: type[BaseModel], *keys: str, under: str = "", prefix: str = "--"
) -> dict[str, Any]:
    """The flags of ``keys`` (none: all) the user gave, as ``{under + key: value}``
    (each value through its Flag's ``read``; a path as text, YAML-safe)."""
    out: dict[str, Any] = {}
    for spec in select(model, keys, prefix):
        raw = getattr(args, spec.dest, None)
        if isinstance(raw, str) and typing.get_origin(_unwrap(spec.info.annotation)) is list:
            raw = split(raw, spec.names[0], choices_of(spec.info.annotation))  # a list spelled A,B,C
        value = raw if raw is None or spec.flag.read is None else spec.flag.read(raw)
        if value is not None:
            out[under + spec.key] = str(value) if isinstance(value, Path) else value
    return out


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


def names(model: type[BaseModel], *, under: str = "", prefix: str = "--") -> dict[str, str]:
    """``{under + key: the flag}`` of every flag of ``model``: how an error names what the user typed."""
    return {under + s.key: _spoken(s) for s in specs(model, prefix=prefix)}


def _spoken(spec: Spec) -> str:
    """The flag an error names: the one spelled as its dest (--tickers of --ticker/--tickers)."""
    return next((n for n in spec.names if n.lstrip("-").replace("-", "_") == spec.dest), spec.names[0])


def field_flag(group: Any, model: type[BaseModel], name: str, *flags: str, help: str = "", **kwargs: Any) -> Any:
    """One flag for ``model``'s field ``name`` without a Flag on it (the cost
    models, whose fields the broker's short forms set): as :func:`add` makes it,
    ``kwargs`` overriding argparse's keywords."""
    info = model.model_fields[name]
    spec = Spec(name, flags, flags[0].lstrip("-").replace("-", "_"), info, Flag(*flags, help=help), _default(info))
    kw = {**kwargs_of(spec, fill=False), **kwargs}
    return group.add_argument(*flags, **kw)
