"""A stop signal that lands in a finalizer still stops (fincon.workflow.stopping).

Python cannot raise an exception in a ``__del__``: it prints "Exception
ignored in ..." and goes on. A SIGTERM that arrived during a tqdm bar's
``__del__`` (once, in tests/test_cli_runs.py) let the run finish and exit 0.
Each test runs, in a fresh process, an object whose ``__del__`` signals its
own process, so the handler's exception is raised inside the finalizer;
then a 20 s sleep that only a signal sent again interrupts."""

from __future__ import annotations

import subprocess
import sys

FINALIZED = """
import os, signal, time

# Ctrl-C as a terminal delivers it: a suite started in the background by a shell without job control
# inherits SIGINT ignored, and Python then leaves it ignored (the sleep below would run out)
signal.signal(signal.SIGINT, signal.default_int_handler)

class Finalized:
    def __init__(self, signum):
        self.signum = signum

    def __del__(self):
        os.kill(os.getpid(), self.signum)
        for _ in range(100_000):  # the signal's handler runs here, inside __del__
            pass

def stalled(signum):
    Finalized(signum)  # collected at once
    time.sleep(20)
    return "finished"
"""


def _run(code: str) -> list[str]:
    res = subprocess.run([sys.executable, "-c", FINALIZED + code], capture_output=True, text=True, timeout=120)
    assert res.stderr == "", res.stderr  # nothing "ignored" on the terminal
    return res.stdout.split("\n")[:-1]


def test_a_command_stops_on_sigterm_and_ctrl_c_swallowed_by_a_finalizer():
    """Before the fix this printed "finished" twice, 20 s apart."""
    lines = _run(
        """
from fincon.cli.main import Terminated, _stoppable
for signum in (signal.SIGTERM, signal.SIGINT):
    t0 = time.monotonic()
    try:
        with _stoppable():
            print(stalled(signum))
    except (Terminated, KeyboardInterrupt) as exc:
        print(type(exc).__name__, time.monotonic() - t0 < 10)
"""
    )
    assert lines == ["Terminated True", "KeyboardInterrupt True"]


def test_an_experiment_worker_stops_its_unit_on_a_sigterm_swallowed_by_a_finalizer():
    """The worker reports the unit failed (the driver then says which and how
    to resume) instead of finishing it. Before the fix: "ok"."""
    lines = _run(
        """
from fincon.workflow.process_pool import _run, _worker_init
_worker_init()
t0 = time.monotonic()
status, failure = _run((0, lambda: stalled(signal.SIGTERM)))
print(status, time.monotonic() - t0 < 10)
print(failure.message)
"""
    )
    assert lines[0] == "failed True"
    assert "terminated (SIGTERM) before the unit finished" in lines[1]
