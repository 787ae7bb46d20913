"""Which fincon code decided a forward journal's sessions.

The register entry seals the code that decides (one sha256 over fincon's
files and prompts, with its commit): it is part of the plan. A step run
after an upgrade or an edit still decides, as long as the sealed decisions
come out again, so each session entry names the code that decided it, the
step says when that is not the registered code, and verify and score say
which sessions other code decided: a record of two codes is not one plan
carried out, and a verifier whose code reproduces the decisions is not
thereby the code that made them.
"""

from __future__ import annotations

from typing import Any

from fincon.engine import artifacts


def stamp() -> dict[str, Any]:
    """The code running now, as a journal seals it: its sha256, and its commit and whether its files
    had uncommitted changes when it runs from a checkout (None otherwise)."""
    return {
        "sha256": artifacts.code_sha256(),
        "git_revision": artifacts.git_revision(),
        "git_dirty": artifacts.git_dirty(),
    }


def named(code: dict[str, Any]) -> str:
    """``sha256 0123456789ab, commit 89abcdef0123 with uncommitted changes``: a code as a person looks it up."""
    rev = code.get("git_revision")
    at = f", commit {rev[:12]}" + (" with uncommitted changes" if code.get("git_dirty") else "") if rev else ""
    return f"sha256 {str(code.get('sha256'))[:12]}{at}"


def record(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The registered code, each other code that sealed sessions (its stamp and the sessions it decided,
    in order) and the code reading the journal now. Session entries sealed before entries named their
    code name none and are taken for the registered code, as the register said; a register from before
    registers named it names none to compare with (nothing is said of it)."""
    registered = (entries[0].get("code") or {}) if entries else {}
    others: dict[str, dict[str, Any]] = {}
    for e in entries if registered.get("sha256") else ():
        code = e.get("code") if e.get("kind") == "session" else None
        if code and code.get("sha256") != registered.get("sha256"):
            sessions = others.setdefault(code["sha256"], {**code, "sessions": []})["sessions"]
            if e["decided"] not in sessions:
                sessions.append(e["decided"])
    return {"registered": registered, "others": list(others.values()), "reader": artifacts.code_sha256()}


def said(rec: dict[str, Any]) -> str:
    """What verify and score add about the code (empty when the registered code decided every session
    and reads the journal now, or when the register names none)."""
    if not rec["registered"].get("sha256"):
        return ""
    parts = [
        f"{len(o['sessions'])} session{'s' if len(o['sessions']) > 1 else ''} ({o['sessions'][0]}"
        f"{'..' + o['sessions'][-1] if len(o['sessions']) > 1 else ''}) decided by other fincon code ({named(o)}) "
        f"than the journal registered ({named(rec['registered'])})"
        for o in rec["others"]
    ]
    sealed_by = {rec["registered"].get("sha256"), *(o["sha256"] for o in rec["others"])}
    if rec["reader"] not in sealed_by:
        parts.append(
            f"replayed by fincon code (sha256 {rec['reader'][:12]}) that sealed none of it: the decisions come out "
            "the same, which does not make it the code that made them"
        )
    return "".join(f"; {p}" for p in parts)


def other_than_registered(register: dict[str, Any], now: dict[str, Any]) -> str | None:
    """A step's warning when it runs other code than the journal registered, else None."""
    sealed = register.get("code") or {}
    if not sealed.get("sha256") or sealed["sha256"] == now["sha256"]:
        return None
    return (
        f"this step runs other fincon code ({named(now)}) than the journal registered ({named(sealed)}): "
        "each session it seals names the code that decided it, and verify and score say so"
    )
