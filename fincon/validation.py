"""Turning pydantic validation errors into the one-line messages users see.

Shared by the run config, the strategy registry, the LLM settings and the
agents; it lives on its own so none of them has to import another for it.
"""

from __future__ import annotations

import datetime as dt
import re

from pydantic import ValidationError

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def format_validation_error(prefix: str, exc: ValidationError) -> str:
    """One line naming every bad key: 'prefix.key: message; ...'."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        key = ".".join(x for x in (prefix, loc) if x)
        msg = " ".join(str(err["msg"]).removeprefix("Value error, ").split())
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown key {key!r}")
        elif key:
            parts.append(f"{key}: {msg}")
        else:
            parts.append(msg)
    return "; ".join(parts)


def parse_iso_date(text: str, what: str = "") -> dt.date:
    """``text`` as a calendar date in YYYY-MM-DD form, else ValueError
    naming ``what``. Nothing else is guessed: ``5/10/2022`` is 10 May to
    pandas and 5 October to most of the world."""
    s = str(text).strip()
    lead = f"{what} " if what else ""
    if not _ISO.match(s):
        raise ValueError(f"{lead}{text!r} is not a date in YYYY-MM-DD form (ISO 8601, e.g. 2022-10-05); "
                         "other orders are not guessed")
    try:
        return dt.date.fromisoformat(s)
    except ValueError:
        raise ValueError(f"{lead}{text!r} is not a calendar date (YYYY-MM-DD)") from None
