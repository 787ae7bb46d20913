"""Output schemas: the JSON schema a backend is asked for, and validation.

Every answer goes through :func:`parse_answer`, whatever the backend promised
(grammar-constrained decoding guarantees the *shape*, not pydantic's value
constraints). The error text it produces is what the re-ask quotes, so it is
short and names the offending field.

How the prompt states the schema depends on the backend. A backend that
enforces it while decoding (``enforces_schema``: llama.cpp compiles it into a
grammar) gets one line sketching the answer (:func:`schema_sketch`, ~40
tokens): the grammar already forbids any other shape, so the full JSON
schema (~200 tokens for an analyst's answer) would only be read, on every
call, by a model that cannot deviate from it anyway. Every other backend
(an OpenAI-compatible server may fall back to plain JSON mode) gets the full
schema.
"""

from __future__ import annotations

import copy
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
    """The JSON schema of ``model`` as sent to backends and hashed in keys.

    Built once per model class (pydantic walks the whole core schema each
    time: about 5 % of a replayed team day when it did so on every call);
    each caller gets its own copy, free to change it."""
    return copy.deepcopy(_json_schema(model))


@lru_cache(maxsize=512)
def _json_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def canonical_json(obj: Any) -> str:
    """Sorted, compact JSON: the one serialisation used for hashing and storage."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def schema_instruction(schema: dict[str, Any], sketch: bool = False) -> str:
    """The answer-format paragraph appended to the system prompt: the full
    schema, or with ``sketch`` (a backend that enforces the schema) one line."""
    if sketch:
        return _template("sketch_instruction.txt").format(sketch=schema_sketch(schema)).strip()
    return _template("schema_instruction.txt").format(schema=canonical_json(schema)).strip()


def reask_message(error: str, schema: dict[str, Any], sketch: bool = False) -> str:
    if sketch:
        return _template("reask_sketch.txt").format(error=error, sketch=schema_sketch(schema)).strip()
    return _template("reask.txt").format(error=error, schema=canonical_json(schema)).strip()


def schema_sketch(schema: dict[str, Any]) -> str:
    """One line showing the shape of an answer, in the schema's property
    order (the order a grammar makes the model write them in), e.g.
    ``{"action":"buy|sell|hold","size":0-1,"why":"text (max 100 chars)","ids":["...",...]}``;
    a node with ``examples`` shows its first example instead.

    Not JSON (``0-1``, ``a|b``): it is read by a model whose decoding the
    schema itself constrains."""
    defs = schema.get("$defs", {})

    def sk(node: dict[str, Any]) -> str:
        if node.get("examples"):
            return json.dumps(node["examples"][0], separators=(",", ":"), ensure_ascii=False)
        ref = node.get("$ref")
        if ref:
            return sk(defs[ref.rsplit("/", 1)[-1]])
        for key in ("anyOf", "oneOf"):
            if key in node:
                return " or ".join(sk(n) for n in node[key])
        if "enum" in node:
            return '"' + "|".join(str(v) for v in node["enum"]) + '"'
        if "const" in node:
            return json.dumps(node["const"])
        kind = node.get("type")
        if kind == "object":
            props = node.get("properties", {})
            return "{" + ",".join(f'"{name}":{sk(sub)}' for name, sub in props.items()) + "}"
        if kind == "array":
            item = sk(node.get("items", {}))
            return f"[{item}]" if node.get("maxItems") == 1 else f"[{item},...]"
        if kind in ("number", "integer"):
            lo, hi = node.get("minimum"), node.get("maximum")
            if lo is not None and hi is not None:
                return f"{lo:g}-{hi:g}"
            return "number"
        if kind == "string":
            if "maxLength" in node:
                return f'"text (max {node["maxLength"]} chars)"'
            return '"..."'
        if kind == "boolean":
            return "true|false"
        return "value"

    return sk(schema)


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
    except (ValueError, RecursionError) as exc:  # a number too long to read, brackets too deeply nested
        what = "too deeply nested" if isinstance(exc, RecursionError) else "a number too long to read"
        raise AnswerInvalid(f"JSON Python cannot read ({what}, {len(body)} characters)") from None
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
