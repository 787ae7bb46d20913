"""Which code decided a forward journal's sessions: fincon's own, and the packages it decides through.

The register entry seals the code that decides (one sha256 over fincon's
files and prompts, with its commit, and the versions of Python and of the
packages a decision goes through): it is part of the plan. A step run after
an upgrade or an edit still decides, as long as the sealed decisions come
out again, so each session entry names the code that decided it, the step
says when that is not the registered code, and verify and score say which
sessions other code decided: a record of two codes is not one plan carried
out, and a verifier whose code reproduces the decisions is not thereby the
code that made them. A replay that fails on other code or packages says
which to verify it with.
"""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fincon.engine import artifacts

#: the packages a decision goes through besides fincon (the run manifest's, and the model clients',
#: the RL agents', the clock's); an upgrade of one can change a decision as an edit of fincon can
DECIDING = (*artifacts.PACKAGES[1:], "scikit-learn", "torch", "stable-baselines3", "gymnasium",
            "llama-cpp-python", "openai", "exchange-calendars")  # fmt: skip


def packages() -> dict[str, str]:
    """Python's version and each installed package of :data:`DECIDING`'s."""
    out = {"python": platform.python_version()}
    for name in DECIDING:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def stamp() -> dict[str, Any]:
    """The code running now, as a journal seals it: its sha256, its commit and whether its files had
    uncommitted changes when it runs from a checkout (None otherwise), and the packages."""
    return {"sha256": artifacts.code_sha256(), "git_revision": artifacts.git_revision(),
            "git_dirty": artifacts.git_dirty(), "packages": packages()}  # fmt: skip


def _key(code: dict[str, Any]) -> tuple[str, str]:
    """What makes two codes the same: fincon's files and, where both say them, the packages."""
    return str(code.get("sha256")), repr(sorted((code.get("packages") or {}).items()))


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("sha256") == b.get("sha256") and (
        not a.get("packages") or not b.get("packages") or a["packages"] == b["packages"]
    )


def named(code: dict[str, Any], against: dict[str, Any] | None = None) -> str:
    """``sha256 0123456789ab, commit 89abcdef0123 with uncommitted changes``, and the packages in which
    it differs from ``against`` (``pandas 2.3.0, not 2.2.3``): a code as a person looks it up."""
    rev = code.get("git_revision")
    at = f", commit {rev[:12]}" + (" with uncommitted changes" if code.get("git_dirty") else "") if rev else ""
    mine, theirs = code.get("packages") or {}, (against or {}).get("packages") or {}
    moved = [f"{k} {mine.get(k, 'absent')}, not {theirs.get(k, 'absent')}" for k in sorted({*mine, *theirs})
             if mine and theirs and mine.get(k) != theirs.get(k)]  # fmt: skip
    return f"sha256 {str(code.get('sha256'))[:12]}{at}" + "".join(f"; {m}" for m in moved)


def record(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The registered code, each other code that sealed sessions (its stamp and the sessions it decided,
    in order) and the code reading the journal now. Session entries sealed before entries named their
    code name none and are taken for the registered code, as the register said; a register from before
    registers named it names none to compare with (nothing is said of it)."""
    registered = (entries[0].get("code") or {}) if entries else {}
    others: dict[tuple[str, str], dict[str, Any]] = {}
    for e in entries if registered.get("sha256") else ():
        code = e.get("code") if e.get("kind") == "session" else None
        if code and not _same(code, registered):
            sessions = others.setdefault(_key(code), {**code, "sessions": []})["sessions"]
            if e["decided"] not in sessions:
                sessions.append(e["decided"])
    return {"registered": registered, "others": list(others.values()), "reader": stamp()}


def other_sessions(rec: dict[str, Any]) -> list[str]:
    """One phrase per other code that decided sessions: which sessions, which code, against the registered
    (none when the register names no code)."""
    registered = rec["registered"]
    if not registered.get("sha256"):
        return []
    return [
        f"{len(o['sessions'])} session{'s' if len(o['sessions']) > 1 else ''} ({o['sessions'][0]}"
        f"{'..' + o['sessions'][-1] if len(o['sessions']) > 1 else ''}) decided by other fincon code "
        f"({named(o, registered)}) than the journal registered ({named(registered)})"
        for o in rec["others"]
    ]


def said(rec: dict[str, Any]) -> str:
    """What verify and score add about the code (empty when the registered code decided every session
    and reads the journal now, or when the register names none)."""
    registered, reader = rec["registered"], rec["reader"]
    if not registered.get("sha256"):
        return ""
    parts = other_sessions(rec)
    if not any(_same(reader, c) for c in (registered, *rec["others"])):
        parts.append(
            f"replayed by fincon code ({named(reader, registered)}) that sealed none of it: the decisions come "
            "out the same, which does not make it the code that made them"
        )
    return "".join(f"; {p}" for p in parts)


def other_than_registered(register: dict[str, Any], now: dict[str, Any]) -> str | None:
    """A step's warning when it runs other code than the journal registered, else None."""
    sealed = register.get("code") or {}
    if not sealed.get("sha256") or _same(sealed, now):
        return None
    return (
        f"this step runs other fincon code ({named(now, sealed)}) than the journal registered ({named(sealed)}): "
        "each session it seals names the code that decided it, and verify and score say so"
    )


def hint(entry: dict[str, Any]) -> str:
    """What a failed replay adds when ``entry`` (the register, or a session naming the code that decided
    it) was sealed by other code than the verifier's (a prompt reworded since asks a call the journal
    never made; a package's upgrade computes otherwise): which, and what to verify it with."""
    sealed = entry.get("code") or {}
    now = stamp()
    if not sealed.get("sha256") or _same(sealed, now):
        return ""
    rev = sealed.get("git_revision")
    where = (
        " (no commit holds it: ask its author)"
        if sealed.get("git_dirty")
        else f" (git checkout {rev[:12]})"
        if rev and sealed["sha256"] != now["sha256"]
        else ""
    )
    return (
        f"; this {'journal' if entry.get('kind') != 'session' else 'entry'} was sealed by other fincon code "
        f"({named(sealed, now)}) than this one (sha256 {now['sha256'][:12]}): verify it with the code that "
        f"sealed it{where}"
    )
