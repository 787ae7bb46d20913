"""Output schemas: the JSON schema a backend is asked for, and validation.

Every answer goes through :func:`parse_answer`, whatever the backend promised
(grammar-constrained decoding guarantees the *shape*, not pydantic's value
constraints). The error text it produces is what the re-ask quotes, so it is
short and names the offending field.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

PROMPTS = Path(__file__).with_name("prompts")


@lru_cache(maxsize=None)
def _template(name: str) -> str:
    return (PROMPTS / name).read_text(encoding="utf-8")


def schema_for(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of ``model`` as sent to backends and hashed in keys."""
    return model.model_json_schema()


def canonical_json(obj: Any) -> str:
    """Sorted, compact JSON: the one serialisation used for hashing and storage."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def schema_instruction(schema: dict[str, Any]) -> str:
    return _template("schema_instruction.txt").format(schema=canonical_json(schema)).strip()


def reask_message(error: str, schema: dict[str, Any]) -> str:
    return _template("reask.txt").format(error=error, schema=canonical_json(schema)).strip()


class AnswerInvalid(ValueError):
    """One answer failed validation; ``str(exc)`` is quoted in the re-ask."""


def _strip_fence(text: str) -> str:
    s = text.strip()
    if s.startswith("```"):
        s = s.split("\n", 1)[1] if "\n" in s else s[3:]
        if s.rstrip().endswith("```"):
            s = s.rstrip()[:-3]
    return s.strip()


def parse_answer(text: str, model: type[BaseModel]) -> BaseModel:
    """Validate raw model text against ``model`` or raise :class:`AnswerInvalid`."""
    body = _strip_fence(text)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        snippet = body[:80].replace("\n", " ")
        raise AnswerInvalid(
            f"not valid JSON ({exc.msg} at char {exc.pos} of {len(body)}; was it cut off by max_tokens?): {snippet!r}"
        ) from None
    if not isinstance(data, dict):
        raise AnswerInvalid(f"expected a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(root)"
            parts.append(f"{loc}: {err['msg']}")
        raise AnswerInvalid("; ".join(parts)) from None
