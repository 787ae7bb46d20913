"""Stopping on a signal, even when it arrives inside a finalizer.

fincon stops a command (SIGTERM, Ctrl-C) and an experiment's worker process
(SIGTERM from the driver) by raising an exception from the signal handler in
the main thread, so that every ``with`` block (staging run directories,
caches) cleans up on the way out. Python cannot raise an exception in a
finalizer (a ``__del__``, a weakref callback, the garbage collector): it
prints "Exception ignored in ..." and goes on. A SIGTERM that arrived during
a tqdm bar's ``__del__`` was lost so, once, in tests/test_cli_runs.py: the
run finished and exited 0 as if never stopped.

:func:`resend_swallowed` closes that hole: a stop exception that Python
swallows is handed to ``sys.unraisablehook``, which sends the same signal
again from a timer thread a moment later. The signal is then raised in the
code that runs after the finalizer (in another finalizer, it is sent again).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Callable, Mapping

#: how long a swallowed signal waits to be sent again: sent at once, it lands
#: in the hook itself, where Python loses it for good
RESEND_AFTER_S = 0.05


def resend_swallowed(signals: Mapping[type[BaseException], int]) -> Callable[[], None]:
    """Install a ``sys.unraisablehook`` that sends ``signals[type(exc)]`` to
    this process again when a finalizer swallowed ``exc``; any other
    unraisable exception goes to the hook that was there before. Returns the
    undo: it waits for the signals already scheduled (so that they arrive
    while the caller's handlers still hold), then puts the previous hook
    back."""
    previous = sys.unraisablehook
    scheduled: list[threading.Timer] = []

    def hook(unraisable) -> None:
        signum = signals.get(type(unraisable.exc_value))
        if signum is None:
            previous(unraisable)
            return
        timer = threading.Timer(RESEND_AFTER_S, os.kill, args=(os.getpid(), signum))
        timer.daemon = True
        scheduled.append(timer)
        timer.start()

    def undo() -> None:
        try:
            for timer in scheduled:
                timer.join()
        finally:
            sys.unraisablehook = previous

    sys.unraisablehook = hook
    return undo
