"""What a journal's git anchor (``fincon forward init --anchor git``) shows a referee.

The chain of hashes catches an entry edited in place, but not a chain its
author re-signed from the edit on: every hash then holds. The git history
does: each step committed the journal as it stood, so a history in which a
later commit changed a line an earlier one held was rewritten after it was
committed. And each session entry's first commit says when it was written:
for a live journal, before the open of the session it trades, or not.
Commit times are the author's own clock; a public remote's push times are
the referee's (docs/forward.md, "Publishing the chain").
"""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path
from typing import Any

from fincon.workflow.forward_clock import session_open
from fincon.workflow.journal import JOURNAL


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}
    ).stdout


def anchored(root: Path, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"problem": ...}`` for a history that is not append-only or entries no commit holds, else the
    commits and, for a live journal, the sessions first committed after their open."""
    try:
        log = [line.split() for line in _git(root, "log", "--reverse", "--format=%H %ct", "--", JOURNAL).splitlines()]
    except OSError as exc:  # no git here: the chain and the replay still stand, the anchor is not read
        return {"unread": f"git cannot run here ({exc.strerror or exc}): the anchor is not read"}
    except subprocess.CalledProcessError as exc:
        return {"problem": f"the git anchor could not be read ({(exc.stderr or '').strip() or exc})"}
    held: list[str] = []
    first: list[int] = []  # each line's first commit time
    for sha, ct in log:
        lines = _git(root, "show", f"{sha}:{JOURNAL}").splitlines()
        changed = next((i for i, (a, b) in enumerate(zip(held, lines)) if a != b), None)
        if changed is not None or len(lines) < len(held):
            k = changed if changed is not None else len(lines)
            return {"problem": f"git commit {sha[:12]} changed entry {k} of the journal, which an earlier commit "
                    "held: the history was rewritten after it was committed"}  # fmt: skip
        first += [int(ct)] * (len(lines) - len(held))
        held = lines
    now = (root / JOURNAL).read_text(encoding="utf-8").splitlines()
    if now[: len(held)] != held:
        k = next(i for i, (a, b) in enumerate(zip(held, now)) if a != b)
        return {"problem": f"entry {k} differs from the journal's last commit: edited after it was committed"}
    if len(now) > len(held):
        return {"problem": f"entries {len(held)}.. are in no commit: the anchor does not date them (commit them)"}
    late = [
        f"{e['strategy']} {e['trades']}"
        for e, t in zip(entries, first)
        if e.get("kind") == "session"
        and not e.get("simulated")
        and dt.datetime.fromtimestamp(t, dt.timezone.utc) >= session_open(dt.date.fromisoformat(e["trades"]))
    ]
    return {"commits": len(log), "late": late, "simulated": any(e.get("simulated") for e in entries)}


def said(a: dict[str, Any]) -> str:
    """The anchor as the verify line says it."""
    if "unread" in a:
        return f"; {a['unread']}"
    if a["simulated"]:
        return f"; anchored in {a['commits']} git commits, append-only (simulated: their times date nothing)"
    if a["late"]:
        return (
            f"; anchored in {a['commits']} git commits, append-only, but {len(a['late'])} session(s) first committed "
            f"after their open: {', '.join(a['late'][:5])}"
        )
    return f"; anchored in {a['commits']} git commits, append-only, every session committed before its open"
