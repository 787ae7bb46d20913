"""What a journal's git anchor (``fincon forward init --anchor git``) shows a referee.

The chain of hashes catches an entry edited in place, but not a chain its
author re-signed from the edit on: every hash then holds. The git history
does: each step committed the journal as it stood, so a history in which a
later commit changed a line an earlier one held was rewritten after it was
committed. And each session entry's first commit says when it was written:
for a live journal, before the open of the session it trades, or not (the
registration: before its first session's open, or it is no pre-registration).
Commit times are the author's own clock; a public remote's push times are
the referee's (docs/forward.md, "Publishing the chain").
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from fincon.errors import ConfigError
from fincon.workflow.journal import JOURNAL, LOCK, REPLAY, STATE, ForwardError, clock_of, must_precede


def _env() -> dict[str, str]:
    """git's environment: the user's PATH, no HOME (no user config: a signing or a hook there would stop a
    step), fincon as the author."""
    name = {"GIT_AUTHOR_NAME": "fincon", "GIT_AUTHOR_EMAIL": "fincon@localhost", "GIT_COMMITTER_NAME": "fincon",
            "GIT_COMMITTER_EMAIL": "fincon@localhost"}  # fmt: skip
    return {**name, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def git_runs() -> None:
    """``--anchor git`` asked where git cannot run: said before the journal exists (it was a traceback after
    the registration was sealed, and the journal then went on unanchored)."""
    try:
        subprocess.run(["git", "--version"], check=True, capture_output=True, env=_env())
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ConfigError(
            f"--anchor git: git cannot run here ({_why(exc)}); install git, or init without --anchor"
        ) from None


def still_there(root: Path, register: dict[str, Any]) -> None:
    """A journal registered with ``--anchor git`` whose .git is gone: a step would go on unanchored."""
    if register.get("anchor") == "git" and not (root / ".git").is_dir():
        raise ForwardError(
            f"{root} was registered with --anchor git and holds no .git now: a step would seal sessions no commit "
            "dates; put the repository back (a clone of its remote) and step again (nothing was sealed)"
        )


def commit(root: Path, message: str, done: str) -> None:
    """``--anchor git``: every sealed step is a commit of DIR (push it to a public remote to timestamp it);
    ``done``: what is sealed already, for the line a failed commit gives."""
    # what a step or a score rebuilds is no part of the record (score's page inlines plotly: 4.8 MB a score)
    ignore = root / ".gitignore"
    kept = ignore.read_text().splitlines() if ignore.is_file() else []
    missing = [p for p in (f"{REPLAY}/", ".replay-inputs/", f"{STATE}/", LOCK, "report.html") if p not in kept]
    if missing:
        ignore.write_text("".join(f"{p}\n" for p in [*kept, *missing]))
    steps = [] if (root / ".git").is_dir() else [["init", "-q"]]
    steps += [["rm", "-q", "--cached", "--ignore-unmatch", "report.html"],  # a page an earlier step committed
              ["add", "-A"], ["commit", "-q", "-m", message]]  # fmt: skip
    try:
        for argv in steps:
            subprocess.run(["git", "-C", str(root), *argv], check=True, capture_output=True, env=_env())
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ForwardError(
            f"{done}, but the git anchor could not commit it ({_why(exc)}): no commit dates it yet; fix git and "
            f"commit it (git -C {root} add -A && git -C {root} commit -m '{message}') or step again, which does"
        ) from None


def refuse_unless_anchored(root: Path, entries: list[dict[str, Any]], keep: int | None = None) -> None:
    """A step on a journal whose git anchor shows it edited, cut or rewritten after a commit: refused, as
    verify refuses it (found in review: a step on a journal cut back to an earlier entry decided again,
    committed the new line and left the anchor showing a rewritten history for ever). Entries no commit
    holds yet are what a step commits. ``keep``: the lines a torn tail's cut keeps, run before it; a torn
    tail a commit holds is no write cut short, and cutting it would rewrite the anchored history."""
    if not (root / ".git").is_dir():
        return
    if (said := anchored(root, entries)).get("problem") and not said.get("behind"):
        raise ForwardError(f"{root}: {said['problem']}; no step is taken on a journal that does not verify")
    if keep is None:
        return
    try:
        held = len(_git(root, "show", f"HEAD:{JOURNAL}").splitlines())
    except subprocess.CalledProcessError:  # no commit, or none holding the journal yet
        held = 0
    if held > keep:
        raise ForwardError(
            f"{root}: the journal's last commit holds {held} lines, and a torn tail would cut it back to {keep}: "
            "the git anchor holds what a step would cut; no step is taken on a journal that does not verify"
        )


@contextmanager
def commits_what_it_seals(root: Path, journal: Any) -> Iterator[None]:
    """Every entry a step seals is committed before the step ends, a session sealed missed too (left
    uncommitted, the journal failed verify until a later step decided one; found in review); a commit
    that fails while the step fails is said beside the step's own error."""
    n = journal.path.read_bytes() if journal.path.is_file() else b""

    def left() -> None:  # the journal changed (a cut and its failed entry may leave as many entries as before)
        entries = journal.entries()
        now = journal.path.read_bytes() if journal.path.is_file() else b""
        if (root / ".git").is_dir() and now != n and anchored(root, entries).get("behind"):
            commit(root, "seal missed sessions", "the missed sessions are sealed")

    try:
        yield
    except BaseException as exc:
        try:
            left()
        except ForwardError as failed:
            exc.add_note(f"fincon: {failed}")
        raise
    left()


def _why(exc: OSError | subprocess.CalledProcessError) -> str:
    """git's first line of complaint (``fatal: ...``; what follows is advice), or why it did not start."""
    lines = (getattr(exc, "stderr", None) or b"").decode(errors="replace").strip().splitlines()
    if lines:
        return next((x for x in lines if x.startswith(("fatal:", "error:"))), lines[0])
    return getattr(exc, "strerror", None) or str(exc)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=_env()
    ).stdout


def _history(root: Path) -> list[tuple[str, int, list[str], list[str]]]:
    """Every commit HEAD descends from (merges and their other parents too), oldest first: its sha, its
    commit time, its parents and the journal's lines in it (none before the journal was added)."""
    listing = _git(root, "rev-list", "--reverse", "--topo-order", "--parents", "--format=%ct", "HEAD")
    commits: list[tuple[str, int, list[str]]] = []
    for head, when in zip(*[iter(listing.splitlines())] * 2):
        _, sha, *parents = head.split()
        commits.append((sha, int(when), parents))
    batch = subprocess.run(
        ["git", "-C", str(root), "cat-file", "--batch"],
        input="".join(f"{sha}:{JOURNAL}\n" for sha, _, _ in commits).encode(),
        check=True, capture_output=True, env=_env(),
    ).stdout  # fmt: skip
    out, at = [], 0
    for sha, when, parents in commits:
        end = batch.index(b"\n", at)
        head = batch[at:end].split()
        if head[-1] == b"missing":
            lines, at = [], end + 1
        else:
            size = int(head[2])
            lines, at = batch[end + 1 : end + 1 + size].decode().splitlines(), end + 1 + size + 1
        out.append((sha, when, parents, lines))
    return out


def anchored(root: Path, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"problem": ...}`` for a history that is not append-only or entries no commit holds, else the
    commits and, for a live journal, the sessions first committed after their open. Every commit's
    journal must begin with each of its parents' (a merge's other parent too: ``git log -p`` shows a
    merge no diff, and a merge commit rewrote twelve sessions past a log of zero-context diffs)."""
    try:  # no commit yet (init's own failed): every entry is one no commit holds, as a step commits them
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--verify", "-q", "HEAD"], capture_output=True, env=_env()
        )
        history = _history(root) if head.returncode == 0 else []
    except OSError as exc:  # no git here: the chain and the replay still stand, the anchor is not read
        return {"unread": f"git cannot run here ({exc.strerror or exc}): the anchor is not read"}
    except subprocess.CalledProcessError as exc:
        why = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
        return {"problem": f"the git anchor could not be read ({(why or '').strip() or exc})"}
    held = {sha: lines for sha, _, _, lines in history}
    commits, earliest = 0, dict[int, int]()  # earliest: the first commit time of a journal of so many lines
    for sha, when, parents, lines in history:
        for parent in parents:
            before = held.get(parent, [])
            if lines[: len(before)] != before:
                k = next((i for i, (a, b) in enumerate(zip(before, lines)) if a != b), len(lines))
                return {"problem": f"git commit {sha[:12]} changed entry {k} of the journal, "
                        "which an earlier commit held: the history was rewritten after it was committed"}  # fmt: skip
        commits += lines != (held.get(parents[0], []) if parents else [])
        earliest[len(lines)] = min(when, earliest.get(len(lines), when))
    # each line's first commit: the earliest of the commits that hold it (every one holds the same line
    # there, the check above), on a side branch or not
    first = [0] * max(earliest, default=0)
    running = max(earliest.values(), default=0)
    for i in reversed(range(len(first))):  # line i is held by every journal of more than i lines
        running = first[i] = min(running, earliest.get(i + 1, running))
    last = history[-1][3] if history else []
    path = root / JOURNAL
    now = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    if now[: len(last)] != last:
        k = next((i for i, (a, b) in enumerate(zip(last, now)) if a != b), len(now))
        return {"problem": f"entry {k} differs from the journal's last commit: edited after it was committed"}
    if len(now) > len(last) or len(entries) > len(first):
        return {
            "problem": f"entries {len(first)}.. are in no commit: the anchor does not date them (commit them)",
            "behind": True,  # what a step commits (its commit failed, or it stopped before it)
        }
    simulated = clock_of(root, entries)  # the plan's clock, never an entry's own word
    late = [
        f"{e['strategy']} {e['trades']}" if e["kind"] == "session" else f"the registration (first session {b[0]})"
        for e, t in zip(entries, first)
        if (b := must_precede(e, simulated)) is not None and dt.datetime.fromtimestamp(t, dt.timezone.utc) >= b[1]
    ]
    return {"commits": commits, "late": late, "simulated": simulated or any(e.get("simulated") for e in entries)}


def said(a: dict[str, Any] | None) -> str:
    """The anchor as the verify line says it (``None``: the journal has none, and what that leaves open)."""
    if a is None:
        return (
            "; not anchored: entries cut from its end, or the whole journal written again, would hold every hash "
            "(fincon forward init --anchor git, pushed to a public remote, dates and fixes each step)"
        )
    if "unread" in a:
        return f"; {a['unread']}"
    if a["simulated"]:
        return f"; anchored in {a['commits']} git commits, append-only (simulated: their times date nothing)"
    if a["late"]:
        return (
            f"; anchored in {a['commits']} git commits, append-only, but {len(a['late'])} "
            f"entr{'y' if len(a['late']) == 1 else 'ies'} first committed after the open of their session: "
            f"{', '.join(a['late'][:5])}"
        )
    return (
        f"; anchored in {a['commits']} git commits, append-only, every session committed before its open (by the "
        "commits' times, which the committer's clock sets: the public remote's push times date them for others)"
    )


def settles_the_window(simulated: bool, anchor: dict[str, Any] | None) -> tuple[bool, str]:
    """Whether a verified journal's record settles what its model could have known of the sessions it
    traded (the card's temporal integrity), and why: only a live journal's decisions, each committed to
    git before its session's open, do, whatever the model's cutoff; a simulated journal's times, or a
    live one's own clock alone, prove nothing to a referee."""
    if simulated or (anchor or {}).get("simulated"):  # the plan's word or any entry's: a simulated one dates nothing
        return False, "a simulated journal: decided on past data, its seal times prove nothing"
    if anchor is None or "commits" not in anchor:
        return False, "a live journal sealed by its author's clock only: " + (
            anchor["unread"] if anchor else "not anchored, nothing outside dates its seals"
        )
    if anchor["late"]:
        return False, f"a live journal, but {len(anchor['late'])} of its entries were committed after their open"
    return True, (
        f"a live journal, verified: every decision sealed and committed to git ({anchor['commits']} commits) "
        "before the open of the session it trades, which no model could then have read (by the commits' times, "
        "set by the author's clock: the public remote's push times are what date them for a referee)"
    )
