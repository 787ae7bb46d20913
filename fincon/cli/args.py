"""Argument types shared by every command: ISO dates and bounded numbers.

Why here and not in each command: ``float("nan")`` and ``float("inf")`` are
valid Python floats, so ``type=float`` lets ``--lr nan`` through to a
training that then writes ``NaN`` into JSON; and ``pandas.Timestamp``
reads ``5/10/2022`` as 10 May (US order) where a European reader meant 5
October. A flag of these types refuses such values in argparse, so the user
gets one line naming the flag and its range before anything runs.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
from pathlib import Path

from fincon import workflow
from fincon.errors import ConfigError, FinconError
from fincon.files import write_atomic
from fincon.validation import parse_iso_date


def iso_date(text: str) -> str:
    """argparse type: an ISO date, returned as the same ``YYYY-MM-DD`` text."""
    try:
        return parse_iso_date(text).isoformat()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _bound(x) -> str:
    """A bound as written: an int whole (4294967295, not 4.29497e+09), a float shortest."""
    return str(x) if isinstance(x, int) else f"{x:g}"


def _range_text(lo, hi, lo_open: bool, hi_open: bool) -> str:
    if lo is not None and hi is not None:
        return f"{'(' if lo_open else '['}{_bound(lo)}, {_bound(hi)}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {_bound(lo)}"
    return f"{'<' if hi_open else '<='} {_bound(hi)}"


def number(
    kind: type = float,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
):
    """argparse type: a finite ``kind`` (int or float) within [lo, hi] (or
    open at either end); the error states the range."""
    rng = _range_text(lo, hi, lo_open, hi_open) if (lo is not None or hi is not None) else "finite"

    def parse(text: str):
        value = kind(text)  # ValueError: argparse says "invalid float value: 'lots'"
        if isinstance(value, float) and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number (range {rng})")
        below = lo is not None and (value <= lo if lo_open else value < lo)
        above = hi is not None and (value >= hi if hi_open else value > hi)
        if below or above:
            raise argparse.ArgumentTypeError(f"{text} is out of range {rng}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in "invalid <type> value" messages
    return parse


def check_output_file(path, flag: str, owned=None):
    """A file a command will write at its end (``--out FILE``), checked
    before any work: not a directory, its folder exists and is a folder, and
    a file already there is one fincon wrote (``owned(path)``: the same
    command's earlier result), never a user's file to be replaced. Checked up
    front so an evaluation that runs for minutes does not fail (with a
    traceback) only when it writes its result."""

    p = Path(path)
    if not str(path).strip():
        raise ConfigError(f"{flag} is empty; give a file path such as result.json")
    if p.is_dir() or str(path).endswith("/"):
        raise ConfigError(f"{flag} {path} is a directory; give a file path such as {p / 'result.json'}")
    if owned is not None and (p.exists() or p.is_symlink()) and not (p.is_file() and owned(p)):
        raise ConfigError(
            f"{flag} {path} exists and is not a file fincon wrote; nothing was written: give a new path "
            "(fincon replaces only its own earlier results)"
        )
    parent = p.parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise ConfigError(f"{flag} {path}: its folder {parent} {what}; create it or give another path")
    existed = p.exists()
    try:  # a probe, removed again: a folder that cannot be written fails now, not after the work
        with open(p, "ab"):
            pass
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: cannot write ({exc.strerror or exc})") from None
    if not existed:
        p.unlink()
    return p


def write_text_atomic(path, text: str, flag: str) -> None:
    """Write ``text`` whole or not at all (fincon.files); a failure is one line naming ``flag``."""

    try:
        write_atomic(path, text)
    except OSError as exc:
        raise FinconError(f"{flag} {path}: cannot write ({exc.strerror or exc})") from None


#: ``--ledger``'s help: where a run's trials are counted (fincon.workflow.trials)
LEDGER_HELP = (
    "the trial ledger this run's scored strategies are added to (default $FINCON_LEDGER, else "
    "~/.local/share/fincon/trials.sqlite; off: none); `fincon ledger` lists it"
)


def ledger_path(args):
    """The ledger ``--ledger`` names (None: off); a directory is one line, now."""

    return workflow.resolve(getattr(args, "ledger", None))


def ledger_env(args):
    """A context in which this process and the workers it starts use the
    ledger ``--ledger`` names (``$FINCON_LEDGER``), restored afterwards."""

    @contextlib.contextmanager
    def scope():
        value = getattr(args, "ledger", None)
        if value is None:
            yield
            return
        ledger_path(args)
        before = os.environ.get("FINCON_LEDGER")
        os.environ["FINCON_LEDGER"] = str(value)
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("FINCON_LEDGER", None)
            else:
                os.environ["FINCON_LEDGER"] = before

    return scope()
