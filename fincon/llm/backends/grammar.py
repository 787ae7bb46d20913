"""The GBNF grammar a local model answers under: llama.cpp's JSON-schema
grammar, made tighter where a small model wastes calls.

Why not ``response_format={"type": "json_object", "schema": ...}`` as is:
its grammar lets a string hold any character and a number any value, and the
answers the 1.5B model got wrong on real data were exactly those: an
insight drifting into Chinese mid-sentence, ``"size": -0.50``, ``"sell"``
with ``"size": 0.00``. Each cost a re-ask (a second full call, ~10 s on 2
cores) and often a fallback. llama.cpp's converter ignores ``minimum`` and
``maximum`` for numbers, so two changes are made here:

* a number bounded within [0, 1] (confidence, size) becomes one of 0, 0.05,
  ... 1 within its bounds (an ``exclusiveMinimum`` leaves out the bound);
* a string holds printable ASCII only (the prompts are English; a remote
  endpoint, which gets no grammar, is still held to English by the answer
  models' validators and re-asked).

The answer models (pydantic) still validate everything; the grammar only
makes the invalid answers impossible to write. The cache key (the schema) is
unchanged, so a recording made under the plain grammar still replays.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: steps a [0, 1] number may take (0.05: finer than a small model's calibration)
STEPS = 20
#: printable ASCII except the quote and the backslash, or a simple escape
ASCII_CHAR = r'char ::= [ !#-\[\]-~] | "\\" (["\\/bfnrt])'


def _unit_interval(node: dict[str, Any]) -> list[float] | None:
    """The allowed values of a number bounded within [0, 1], else None."""
    if node.get("type") != "number":
        return None
    lo, hi = node.get("minimum"), node.get("maximum")
    xlo = node.get("exclusiveMinimum")
    if lo is None and xlo is None or hi is None or (lo if lo is not None else xlo) < 0 or hi > 1:
        return None
    values = [round(i / STEPS, 2) for i in range(STEPS + 1)]
    return [v for v in values if (lo is None or v >= lo) and (xlo is None or v > xlo) and v <= hi]


def tightened(schema: Any) -> Any:
    """A copy of ``schema`` with every number bounded within [0, 1] turned into an enum."""
    if isinstance(schema, list):
        return [tightened(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    values = _unit_interval(schema)
    if values:
        return {"enum": values}
    return {k: tightened(v) for k, v in schema.items()}


def gbnf(schema: dict[str, Any]) -> str:
    """The grammar text for ``schema`` (see the module docstring)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    text = json_schema_to_gbnf(json.dumps(tightened(schema)))
    out, n = re.subn(r"^char ::= .*$", lambda _: ASCII_CHAR, text, flags=re.M)
    return out if n else text  # a schema without strings has no char rule
