"""What the executors share: the task type, how many units a worker
process runs, and how a failed unit is reported (one line naming it).

Apart from :mod:`fincon.workflow.executors` so that the process pool
(:mod:`fincon.workflow.process_pool`), which that module opens, does not
import it back.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from fincon.errors import FinconError

log = logging.getLogger("fincon.workflow.executors")

#: an argument-free, picklable callable (fincon.workflow.experiment_units.Job)
Task = Callable[[], Any]
#: units one worker process (Ray's or the local pool's) runs before it is
#: replaced: a fresh worker pays ~3 s of imports, and the bound keeps what a
#: process holds on to per unit (chromadb's client of each run store) from
#: growing without end
UNITS_PER_WORKER = 8


class UnitFailure:
    """What a worker reports about a failed unit (picklable, no exception object:
    a class that does not unpickle on the driver would hide the message)."""

    def __init__(self, message: str, exit_code: int, traceback: str, fincon: bool = False):
        self.message, self.exit_code, self.traceback, self.fincon = message, exit_code, traceback, fincon


def phase_error(failures: list[tuple[str, UnitFailure]], where: str = "a Ray worker") -> FinconError:
    """The one-line error of a phase whose units failed (the first named, the others counted)."""
    name, first = failures[0]
    for n, f in failures:
        if f.traceback:
            log.debug("%s failed on %s:\n%s", n, where, f.traceback)
    message = first.message if first.fincon and name in first.message else f"{name}: {first.message}"
    if not first.fincon:
        message += " (`fincon -v experiment ...` prints the worker's traceback)"
    if len(failures) > 1:
        message += f"; {len(failures) - 1} more failed: {', '.join(n for n, _ in failures[1:])}"
    if "rerun" not in message:
        message += "; the other units are kept, rerun the same command to resume"
    err = FinconError(message)
    err.exit_code = first.exit_code
    return err


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:500]
