"""Answer-key leaks: does any prompt an evaluation sent carry the answer?

An evaluation must never show a model its answer key. This module reads
every prompt an evaluation sent (the LLM cache it wrote: table ``calls``,
column ``messages``) and looks for what only the key knows:

* the **gold value** as the scorer compares it (rounded to the question's
  precision), outside the text the model is meant to read (the document, or
  the filing's own figures: an extraction question's answer is printed in
  its document, by design);
* the **gold program** (FinQA's ``subtract(5829, 5735), divide(#0, 5735)``)
  or any of its steps;
* the **formula text** of the answer key (:data:`fincon.agents.critics.claims.METRICS`
  ``how``: ``revenue / (1 + growth / 100)``).

:func:`scan` returns every hit (an empty list: clean); the tests fail on
any. Reads only; calls no model.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from fincon.agents.critics.claims import METRICS


@dataclass(frozen=True)
class Key:
    """One question's answer key: what no prompt may show."""

    id: str
    gold: float | None = None
    decimals: int = 2
    program: str = ""
    #: text the model is meant to read (the document): removed before looking for the gold value
    readable: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hit:
    key: str
    what: str  # gold value | gold program | formula
    text: str
    prompt: int  # index of the prompt


def formula_texts() -> list[str]:
    """Every metric formula the synthetic set's answer key uses, in words."""
    return sorted({m.how for m in METRICS.values() if m.how})


def program_steps(program: str) -> list[str]:
    """A FinQA program and each of its steps (``divide(#0, 5735)``)."""
    p = " ".join((program or "").split())
    if not p:
        return []
    steps = [s.strip() for s in re.findall(r"[a-z_]+\([^()]*\)", p)]
    return [p] + [s for s in steps if s != p]


def _norm(text: str) -> str:
    return " ".join(text.split())


#: a document counts as shown in a prompt when at least its first MIN_SHOWN characters are
MIN_SHOWN = 80


def _remove_readable(prompt: str, doc: str) -> str:
    """``prompt`` without ``doc``, or without the longest leading part of it
    the prompt shows (critics see a source cut at a length)."""
    if doc in prompt:
        return prompt.replace(doc, " ")
    lo, hi = 0, len(doc)  # the longest prefix of doc in prompt (containment is monotone in length)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if doc[:mid] in prompt:
            lo = mid
        else:
            hi = mid - 1
    return prompt.replace(doc[:lo], " ") if lo >= MIN_SHOWN else prompt


def _gold_pattern(gold: float, decimals: int) -> re.Pattern:
    s = f"{abs(gold):.{decimals}f}"
    # the number on its own: not inside a longer number (12.34 is not in 112.345)
    return re.compile(r"(?<![\d.])" + re.escape(s) + r"(?![\d])")


def scan(prompts: Sequence[str], keys: Iterable[Key], formulas: Sequence[str] | None = None) -> list[Hit]:
    """Every answer-key string found in ``prompts``. A gold value is looked
    for only in prompts that mention the key's document or question
    (``readable``), with that readable text removed; programs and formula
    texts everywhere."""
    formulas = list(formula_texts() if formulas is None else formulas)
    normed = [_norm(p) for p in prompts]
    hits: list[Hit] = []
    for n, p in enumerate(normed):
        for f in formulas:
            if _norm(f) and _norm(f) in p:
                hits.append(Hit("*", "formula", f, n))
    for k in keys:
        for step in program_steps(k.program):
            hits += [Hit(k.id, "gold program", step, n) for n, p in enumerate(normed) if step in p]
        if k.gold is None or not k.readable:
            continue
        pat = _gold_pattern(k.gold, k.decimals)
        readable = [_norm(r) for r in k.readable if r and r.strip()]
        for n, p in enumerate(normed):
            if not any(r[:MIN_SHOWN] in p for r in readable):
                continue
            rest = p
            for r in sorted(readable, key=len, reverse=True):
                rest = _remove_readable(rest, r)
            m = pat.search(rest)
            if m:
                hits.append(Hit(k.id, "gold value", rest[max(0, m.start() - 40) : m.end() + 40], n))
    return hits


def cached_prompts(path: str | Path) -> list[str]:
    """The text of every prompt in an LLM cache (``calls.messages``)."""
    con = sqlite3.connect(str(path))
    try:
        rows = con.execute("SELECT messages FROM calls ORDER BY rowid").fetchall()
    finally:
        con.close()
    return ["\n".join(m.get("content", "") for m in json.loads(r[0])) for r in rows]
