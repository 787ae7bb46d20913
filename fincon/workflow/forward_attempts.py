"""Attempts at a session that sealed no decision, sealed all the same: a restart marks a session failed,
never "continued" (the design's lesson from TraderHarness). Without a trace, a step stopped (SIGTERM,
Ctrl-C) or failed once it had read its inputs was decided again by the next step as if never tried, so
someone could stop a step whose decision they disliked and draw again unrecorded; and a write cut short
(power, SIGKILL mid-seal) left one strategy's entry of a session sealed and not the others', and the next
step went on from it (found in review).

* :func:`recorded`, around a decision once its inputs are frozen: a failure or a stop before its seal
  appends a ``failed`` entry (the session, the reason, the hash of the inputs it read); the next step
  may decide the session, and verify and score count the failed attempts;
* :func:`cut_torn_tail`, before a step reads the journal: a torn last line, and the entries of a last
  session sealed for some of the plan's strategies only, are cut back to the last complete session, the
  bytes kept in ``journal.torn`` (nothing is lost), and the cut sealed, in the same write, as a
  ``failed`` entry naming those bytes' size and SHA-256.

A SIGKILL or a power cut before the seal leaves no entry (no handler runs): docs/forward.md says so.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from fincon import stopping
from fincon.errors import ConfigError, FinconError
from fincon.workflow.forward_sessions import planned
from fincon.workflow.journal import Clock, Journal, Late, _whole, stamp

#: where a cut torn tail's bytes are kept, appended to, beside the journal
TORN = "journal.torn"
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


def cut_torn_tail(root: Path, journal: Journal, clock: Clock) -> dict[str, Any] | None:
    """Cut a torn tail back (module docstring) and say so in one line; the ``failed`` entry sealed, or None
    when the journal ends with a whole, complete session (or holds no registration)."""
    path = journal.path
    if not path.is_file():
        return None
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep < len(data) and _whole(data[keep:].decode("utf-8", "replace")):
        data, keep = data + b"\n", len(data) + 1  # a whole entry without its newline is an entry
    torn = data[keep:]
    entries = journal.entries()
    want = planned(entries[0]) if entries else []
    k, day = len(entries), None
    if want and entries[-1].get("kind") == "session":
        last = entries[-1]["decided"]
        j = k
        while j > 1 and entries[j - 1].get("kind") == "session" and entries[j - 1].get("decided") == last:
            j -= 1
        if not set(want) <= {e.get("strategy") for e in entries[j:]}:
            k, day = j, last
    if not torn and day is None:
        return None
    cut = n = 0
    for line in data[:keep].splitlines(keepends=True):  # the byte where entry k's line begins
        if n >= k:
            break
        cut, n = cut + len(line), n + bool(line.strip())
    cut_bytes = data[cut:]
    if day is None:  # a line torn before its session was named: its first fields may say it
        found = re.search(rb'"(?:decided|session)":"(\d{4}-\d\d-\d\d)"', torn)
        day = found.group(1).decode() if found else None
    with open(root / TORN, "ab") as fh:  # kept first: a stop between the two leaves the bytes twice, not lost
        fh.write(cut_bytes if cut_bytes.endswith(b"\n") else cut_bytes + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    lines = len(entries) - k
    what = f"{lines} whole entr{'y' if lines == 1 else 'ies'} of a session sealed for some strategies only"
    what = " and ".join(x for x in (what if lines else "", f"a torn line of {len(torn)} bytes" if torn else "") if x)
    entry = {"kind": "failed", "session": day, "sealed_at": stamp(clock),
             "reason": f"a write cut short (a step killed mid-seal): {what}, cut back and kept in {TORN}",
             "cut": {"file": TORN, "bytes": len(cut_bytes), "sha256": hashlib.sha256(cut_bytes).hexdigest()}}  # fmt: skip
    (sealed,) = journal.append_all([entry], cut=cut)
    print(f"fincon: {root}: the journal's last write was cut short: {what} (session {day or 'unknown'}) cut back, "
          f"its {len(cut_bytes)} bytes kept in {root / TORN}, and sealed as a failed attempt", file=sys.stderr)  # fmt: skip
    return sealed


def said(counts: dict[str, int]) -> str:
    """The failed attempts in words, for verify and score (empty without any)."""
    if not counts:
        return ""
    n = sum(counts.values())
    each = ", ".join(f"{d} ×{c}" if c > 1 else d for d, c in counts.items())
    return f"{n} failed attempt{'s' if n > 1 else ''} sealed (stopped or failed before a seal: {each})"
