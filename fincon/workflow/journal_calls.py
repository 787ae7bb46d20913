"""The model calls a forward journal's entries name, checked against the journal's ``calls.sqlite``."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any, Mapping


def check_call(db: Path, call: Mapping[str, Any]) -> str | None:
    """A call a journal entry names: its prompt and answer, as kept in the journal's ``calls.sqlite`` at
    ``db``, hash as sealed (fincon.workflow.journal.verify_chain)."""

    if not db.is_file():
        return f"the calls it names are not kept ({db.name} is missing)"
    counts = [k for k in ("prompt_tokens", "completion_tokens") if k in call]  # sealed since 2026-12-02
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        row = conn.execute(f"SELECT {', '.join(['messages', 'answer', *counts])} FROM calls WHERE key = ?",
                           (call["key"],)).fetchone()  # fmt: skip
    finally:
        conn.close()
    if row is None:
        return f"call {call['key'][:16]} ({call.get('agent')}) is not in {db.name}"
    if hashlib.sha256(row[0].encode()).hexdigest() != call["prompt_sha256"]:
        return f"the prompt of call {call['key'][:16]} ({call.get('agent')}) was changed"
    if hashlib.sha256(row[1].encode()).hexdigest() != call["answer_sha256"]:
        return f"the answer of call {call['key'][:16]} ({call.get('agent')}) was changed"
    for k, got in zip(counts, row[2:]):  # what --charge-llm charges the book
        if got != call[k]:
            return (
                f"the {k} of call {call['key'][:16]} ({call.get('agent')}) was changed ({call[k]} sealed, {got} kept)"
            )
    return None
