"""Turning pydantic validation errors into the one-line messages users see.

Shared by the run config, the strategy registry, the LLM settings and the
agents; it lives on its own so none of them has to import another for it.
"""

from __future__ import annotations

from pydantic import ValidationError


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
