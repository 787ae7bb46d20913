"""Attempts at a session that sealed no decision, sealed all the same: a restart marks a session failed,
never "continued" (the design's lesson from TraderHarness). Without a trace, a step stopped (SIGTERM,
Ctrl-C) or failed once it had read its inputs was decided again by the next step as if never tried, so
someone could stop a step whose decision they disliked and draw again unrecorded; and a write cut short
(power, SIGKILL mid-seal) left one strategy's entry of a session sealed and not the others', and the next
step went on from it (found in review).

* :func:`recorded`, around a decision once its inputs are frozen: a failure or a stop before its seal
  appends a ``failed`` entry (the session, the reason, the hash of the inputs it read); the next step
  may decide the session, and verify and score count the failed attempts;
* :func:`tail` and :func:`tidy`, before a step decides (once its anchor and chain checks passed): a torn
  last line, and the entries of a last session sealed for some of the plan's strategies only, are cut
  back to the last complete session, the bytes kept in ``journal.torn`` (nothing is lost), and the cut
  sealed, in the same write, as a ``failed`` entry naming those bytes' size and SHA-256; the inputs a
  step killed before its seal (SIGKILL, power: no handler ran) left after every sealed folder are sealed
  as a ``failed`` entry naming their hash, then removed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from fincon import stopping
from fincon.errors import ConfigError, FinconError
from fincon.workflow.forward_sessions import planned
from fincon.workflow.journal import INPUTS, Clock, Journal, Late, _whole, decided, missed, stamp, tree_hash

#: where a cut torn tail's bytes are kept, appended to, beside the journal
TORN = "journal.torn"
#: a failed entry's reason for a folder a killed step left (tidy): no handler ran to seal it then
KILLED = "a step stopped after its inputs were frozen, and no handler ran (SIGKILL or a power cut)"
#: what a stop is called in a failed entry's reason (fincon.cli.main's SIGTERM exception, Ctrl-C's)
STOPS = {"Terminated": "SIGTERM", "KeyboardInterrupt": "SIGINT (Ctrl-C)"}


def _why(exc: BaseException) -> str:
    """A failed entry's reason: the stop, or the error in one line."""
    stop = stopping.received()
    if stop is not None or not isinstance(exc, Exception):
        name = (stop or type(exc)).__name__
        return f"the step was stopped ({STOPS.get(name, name)}) after its inputs were frozen, before its seal"
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:500]


@contextmanager
def recorded(journal: Journal, day: dt.date, frozen: dict[str, Any], clock: Clock) -> Iterator[None]:
    """Seal a ``failed`` entry for ``day`` when the block (a decision on inputs ``frozen``) ends in an error
    or a stop before the session is sealed; a decision too late (:class:`Late`) is sealed missed by the
    step instead, and bad input (:class:`ConfigError`, exit 2) draws nothing that a retry could redraw. The entry names the inputs' hash under ``frozen``, not ``inputs``: the folder is
    removed (fincon.workflow.forward_plan.frozen_inputs) and frozen again by the step that decides it. A
    journal that cannot be written (a full disk) keeps nothing, and the error is the step's own."""
    try:
        yield
    except (Late, ConfigError):  # bad input (exit 2: a model file that is none) fails the same on every retry
        raise
    except BaseException as exc:
        with stopping.held():  # a second stop waits until the entry is whole
            try:
                if not any(e.get("decided") == str(day) for e in journal.entries()):
                    journal.append({"kind": "failed", "session": str(day), "sealed_at": stamp(clock),
                                    "reason": _why(exc), "frozen": frozen})  # fmt: skip
                    if isinstance(exc, FinconError) and exc.args and isinstance(exc.args[0], str):
                        exc.args = (f"{exc.args[0]} (the attempt at {day} is sealed failed: verify and score "
                                    "count it)", *exc.args[1:])  # fmt: skip
            except (OSError, FinconError):
                pass
        raise


@dataclass
class Tail:
    """What a step finds after the journal's last complete session, read before anything is written: the
    step's anchor and chain checks run on :attr:`entries` first, and a step they refuse has changed nothing
    (found in review: the cut ran first, and a step then refused said "nothing was sealed")."""

    #: the entries the journal keeps (the whole ones, less a session sealed for some strategies only)
    entries: list[dict[str, Any]]
    #: the byte the journal is cut back to (None: nothing to cut), the lines before it, and the cut in words
    cut: int | None = None
    lines: int = 0
    what: str = ""
    #: the session of a partly sealed session's entries (None: only a torn line, which names nothing sure)
    day: str | None = None
    #: folders of frozen inputs after every sealed one, which no entry kept names: a killed step's
    leftover: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.cut is None and not self.leftover


def tail(root: Path, journal: Journal) -> Tail:
    """A torn tail (module docstring) and the leftover inputs, found without writing anything."""
    path = journal.path
    entries = journal.entries()
    data = path.read_bytes() if path.is_file() else b""
    keep = data.rfind(b"\n") + 1
    if keep < len(data) and _whole(data[keep:].decode("utf-8", "replace")):
        keep = len(data)  # a whole entry without its newline is an entry
    torn = data[keep:]
    want = planned(entries[0]) if entries else []
    k, day = len(entries), None
    if want and entries[-1].get("kind") == "session":
        last = entries[-1]["decided"]
        j = k
        while j > 1 and entries[j - 1].get("kind") == "session" and entries[j - 1].get("decided") == last:
            j -= 1
        if not set(want) <= {e.get("strategy") for e in entries[j:]}:
            k, day = j, last
    out = Tail(entries[:k])
    named = {e["inputs"]["path"] for e in out.entries if isinstance(e.get("inputs"), dict) and "path" in e["inputs"]}
    after = max(named, default="")
    out.leftover = [f"{INPUTS}/{p.name}" for p in sorted((root / INPUTS).glob("[!.]*")) if p.is_dir()
                    and f"{INPUTS}/{p.name}" not in named and f"{INPUTS}/{p.name}" > after]  # fmt: skip
    if not torn and day is None:
        return out
    cut = n = 0
    for line in data[:keep].splitlines(keepends=True):  # the byte where entry k's line begins
        if n >= k:
            break
        cut, n = cut + len(line), n + bool(line.strip())
    lines = len(entries) - k
    what = f"{lines} whole entr{'y' if lines == 1 else 'ies'} of a session sealed for some strategies only"
    out.what = " and ".join(
        x for x in (what if lines else "", f"a torn line of {len(torn)} bytes" if torn else "") if x
    )
    out.cut, out.lines, out.day = cut, n, day
    return out


def _session(folder: str | None, day: str | None, entries: list[dict[str, Any]]) -> str | None:
    """The session an unsealed attempt was at: its leftover inputs folder's, else the partly sealed
    session's; never one decided or missed already (a torn line's own bytes name any date: read from
    them, a failed entry at a session sealed before failed verify for ever, found in review)."""
    said = folder.rpartition("/")[2] if folder else day
    try:
        at = dt.date.fromisoformat(said) if said else None
    except ValueError:
        return None
    return None if at is None or at in decided(entries) or at in missed(entries) else str(at)


def tidy(root: Path, journal: Journal, found: Tail, clock: Clock) -> list[dict[str, Any]]:
    """Seal what :func:`tail` found, once the step's checks passed: the cut (its bytes kept in
    ``journal.torn`` first) and each leftover inputs folder as a ``failed`` entry, in one write, then
    remove the folders (a step freezes its session again). A step killed after it froze its inputs (SIGKILL,
    a power cut: no handler ran) left only that folder; removed unsealed, the decision it may have drawn
    was drawn again with no trace (found in review). A kill between the write and the removal seals the
    attempt twice, never none."""
    if found.empty:
        return []
    todo = [{"kind": "failed", "session": _session(f, None, found.entries), "sealed_at": stamp(clock),
             "reason": f"{KILLED}: its inputs {f} removed, frozen again by the step that decides the session",
             "frozen": {"path": f, "sha256": tree_hash(root / f)}} for f in found.leftover]  # fmt: skip
    if found.cut is not None:
        cut_bytes = journal.path.read_bytes()[found.cut :]
        with open(root / TORN, "ab") as fh:  # kept first: a stop between the two leaves the bytes twice, not lost
            fh.write(cut_bytes if cut_bytes.endswith(b"\n") else cut_bytes + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        first = todo[0] if todo else {"kind": "failed", "sealed_at": stamp(clock)}
        first["session"] = _session(found.leftover[0] if found.leftover else None, found.day, found.entries)
        first["reason"] = f"a write cut short (a step killed mid-seal): {found.what}, cut back and kept in {TORN}"
        first["cut"] = {"file": TORN, "bytes": len(cut_bytes), "sha256": hashlib.sha256(cut_bytes).hexdigest()}
        todo[:1] = [first]
    sealed = journal.append_all(todo, cut=found.cut)
    for f in found.leftover:
        shutil.rmtree(root / f)
    for e in sealed:
        day = e["session"] or "unknown"
        print(f"fincon: {root}: the journal's last write was cut short: {found.what} (session {day}) cut back, its "
              f"{e['cut']['bytes']} bytes kept in {root / TORN}, and sealed as a failed attempt" if "cut" in e else
              f"fincon: {root}: a step was killed after it froze {e['frozen']['path']} (session {day}), before any "
              "seal: the attempt is sealed failed and its inputs removed", file=sys.stderr)  # fmt: skip
    return sealed


def own(new: list[dict[str, Any]]) -> list[str | None]:
    """The sessions a step's own attempts were sealed failed at, among the entries it appended (``new``):
    not an earlier step's, which it sealed as it began (a cut, a leftover folder: a stop message blamed
    the stop for them, found in review), nor a session it went on to decide."""
    done = {e.get("decided") for e in new if e.get("kind") == "session"}
    return [e.get("session") for e in new if e.get("kind") == "failed" and "cut" not in e
            and not str(e.get("reason", "")).startswith(KILLED) and e.get("session") not in done]  # fmt: skip


def said(counts: dict[str, int]) -> str:
    """The failed attempts in words, for verify and score (empty without any)."""
    if not counts:
        return ""
    n = sum(counts.values())
    each = ", ".join(f"{d} ×{c}" if c > 1 else d for d, c in counts.items())
    return f"{n} failed attempt{'s' if n > 1 else ''} sealed (stopped or failed before a seal: {each})"
