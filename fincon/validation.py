"""Turning pydantic validation errors into the one-line messages users see.

Shared by the run config, the strategy registry, the LLM settings and the
agents; it lives on its own so none of them has to import another for it.
"""

from __future__ import annotations

import datetime as dt
import re
import types
import typing
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ValidationError, model_validator

from fincon.errors import ConfigError

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def format_validation_error(prefix: str, exc: ValidationError, model: type | None = None) -> str:
    """One line naming every bad key: 'prefix.key: message; ...'. With the
    ``model`` that was validated, a non-finite number also gets the key's
    range (pydantic only says "Input should be a finite number")."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        key = ".".join(x for x in (prefix, loc) if x)
        msg = " ".join(str(err["msg"]).removeprefix("Value error, ").split())
        if err["type"] == "finite_number" and model is not None:
            rng = field_range(model, err["loc"])
            msg += f" (range {rng})" if rng else " (NaN and infinities are not settings)"
        if err["type"] in ("list_type", "tuple_type", "set_type") and isinstance(err.get("input"), str):
            msg += f" (values are read as YAML: write a list in brackets, [{err['input']}])"  # 'news,filings'
        if err["type"] == "extra_forbidden":
            valid = _fields_at(model, err["loc"][:-1]) if model is not None else []
            parts.append(f"unknown key {key!r}" + (f" (valid: {', '.join(valid)})" if valid else ""))
        elif key:
            parts.append(f"{key}: {msg}")
        else:
            parts.append(msg)
    return "; ".join(parts)


def _fields_at(model: Any, loc: tuple) -> list[str]:
    """The field names of the model reached by following ``loc`` from ``model`` (empty when it is none)."""

    for part in loc:
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return []
        model = model.model_fields[part].annotation
    if isinstance(model, type) and issubclass(model, BaseModel):
        return sorted(model.model_fields)
    return []


def parse_iso_date(text: str, what: str = "") -> dt.date:
    """``text`` as a calendar date in YYYY-MM-DD form, else ValueError
    naming ``what``. Nothing else is guessed: ``5/10/2022`` is 10 May to
    pandas and 5 October to most of the world."""
    s = str(text).strip()
    lead = f"{what} " if what else ""
    if not _ISO.match(s):
        raise ValueError(
            f"{lead}{text!r} is not a date in YYYY-MM-DD form (ISO 8601, e.g. 2022-10-05); other orders are not guessed"
        )
    try:
        return dt.date.fromisoformat(s)
    except ValueError:
        raise ValueError(f"{lead}{text!r} is not a calendar date (YYYY-MM-DD)") from None


def field_range(model: type, loc: tuple) -> str | None:
    """The bounds of the field at ``loc`` in ``model`` (nested models
    followed), as text such as ``(0, 0.5)`` or ``>= 0``; None when unbounded."""

    field = None
    for part in loc:
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None
        field = model.model_fields[part]
        model = field.annotation
    if field is None:
        return None
    lo = hi = None
    lo_open = hi_open = False
    for m in field.metadata:
        for attr, is_lo, is_open in (
            ("gt", True, True),
            ("ge", True, False),
            ("lt", False, True),
            ("le", False, False),
        ):
            v = getattr(m, attr, None)
            if v is not None:
                if is_lo:
                    lo, lo_open = v, is_open
                else:
                    hi, hi_open = v, is_open
    if lo is not None and hi is not None:
        return f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {lo:g}"
    if hi is not None:
        return f"{'<' if hi_open else '<='} {hi:g}"
    return None


def validated(model: type, data: Any, where: str):
    """``data`` as an instance of the pydantic ``model`` (kept as it is when it
    already is one); a bad key or value is a ConfigError naming ``where.KEY``."""

    if isinstance(data, model):
        return data
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(where, exc, model)) from None


def iso_date_value(v: Any) -> Any:
    """A config date: a YAML date or a YYYY-MM-DD string, nothing guessed.
    pydantic alone would read 20221005 as seconds since 1970 and a string
    such as 5/10/2022 fails only by luck; here both are refused by name."""
    if isinstance(v, dt.datetime):
        raise ValueError(f"{v} has a time of day; give a date, YYYY-MM-DD")
    if isinstance(v, dt.date):
        return v
    if isinstance(v, str):
        return parse_iso_date(v)
    raise ValueError(f"{v!r} is not a date; give YYYY-MM-DD (ISO 8601)")


#: a date field of a config: a YAML date or a YYYY-MM-DD string, refused by name otherwise
IsoDate = Annotated[dt.date, BeforeValidator(iso_date_value)]


#: a ticker as a file name and a folder's name take it: letters, digits and the ". - ^ = _" of real symbols
_SYMBOL = re.compile(r"\^?[A-Z0-9][A-Z0-9.=_-]*")


def symbol(t: str) -> str:
    """``t`` stripped and in capitals; a ticker that is no symbol (a "/", "..", a space) is refused: it was
    a path, which read prices from outside --data and wrote the run outside runs/ (found in review)."""
    t = t.strip().upper()
    if not _SYMBOL.fullmatch(t) or ".." in t:
        raise ValueError(f"ticker {t!r} is not a symbol (letters, digits and . - ^ = _ only)")
    return t


def once(values: list[str], hint: str = "") -> list[str]:
    """``values`` as given; a name given twice is refused (``hint`` added to the message), never dropped
    without a word: tickers, strategies, an experiment's baselines, ablations, universes and protocols."""
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        raise ValueError(f"{', '.join(twice)} given more than once{hint.format(first=twice[0])}")
    return values


def _numeric(annotation: Any) -> bool:
    """An int or float field (optional or not), bool not among its types."""
    args = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) else ()
    kinds = set(args) if args else {annotation}
    return bool(kinds & {int, float}) and bool not in kinds


class Settings(BaseModel):
    """A model of user settings (a config's sections, a strategy's parameters, a cost model): a yes/no
    where a number belongs is refused by its key. pydantic's lax mode reads True as 1, so
    ``broker: {cash: true}`` ran with $1 and ``--param sma-cross.fast=true`` with a 1-day average."""

    @model_validator(mode="before")
    @classmethod
    def _no_yes_no_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, f in cls.model_fields.items():
                for key in (name, f.alias):
                    value = data.get(key) if key else None
                    if isinstance(value, bool) and _numeric(f.annotation):
                        raise ValueError(f"{key}: {str(value).lower()} is a yes/no, and {key} is a number")
        return data
