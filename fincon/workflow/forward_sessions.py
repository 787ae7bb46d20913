"""What a forward journal's entries say of its sessions, beyond the chain: the strategies its
registration planned, a session sealed for some of them only, and the attempts that sealed nothing.
Kept apart from fincon.workflow.journal, which reads it, so that this module imports nothing of it."""

from __future__ import annotations

from typing import Any, Mapping


def planned(register: Mapping[str, Any]) -> list[str]:
    """The strategies the registration sealed: every decided session holds one entry of each."""
    return list(((register.get("plan") or {}).get("config") or {}).get("strategies") or ())


def incomplete(entries: list[dict[str, Any]]) -> str | None:
    """Why a decided session does not hold one entry of each planned strategy (a write cut short, a line
    removed), naming its last entry: a strategy without its entry traded, in every later replay, on a
    decision nobody sealed (found in review: a torn tail verified, and the next step went on from it)."""
    want, by_day = planned(entries[0]), dict[str, list[int]]()
    for i, e in enumerate(entries):
        if e.get("kind") == "session":
            by_day.setdefault(str(e.get("decided")), []).append(i)
    for day, rows in by_day.items():
        names = [str(entries[i].get("strategy")) for i in rows]
        lacking, stray = [n for n in want if n not in names], [n for n in names if n not in want]
        if want and (lacking or stray):
            i = rows[-1]
            where = f"entry {i} (seq {entries[i].get('seq')}, session {names[-1]} {day})"
            if stray:
                return f"{where}: {stray[0]} is no strategy of the plan ({', '.join(want)})"
            return (f"{where}: the session {day} is sealed for {', '.join(names)} only, and the plan's "
                    f"{', '.join(lacking)} has no entry of it (a write cut short, or a line removed): its replay "
                    "trades on a decision nobody sealed; `fincon forward step` cuts a torn session back")  # fmt: skip
    return None


def failed(entries: list[dict[str, Any]]) -> dict[str, int]:
    """How many attempts at each session sealed no decision (``failed``: a step stopped or failed once its
    inputs were frozen, a write cut short), by session ("unknown": a torn line and no inputs left to name it)."""
    out: dict[str, int] = {}
    for e in entries:
        if e.get("kind") == "failed":  # a torn line after which no inputs were left names no session
            day = str(e.get("session") or "unknown")
            out[day] = out.get(day, 0) + 1
    return out
