"""Stopping on a signal, even when the stop is lost on its way out.

fincon stops a command (SIGTERM, Ctrl-C) and an experiment's worker process
(SIGTERM from the driver) by raising an exception from the signal handler in
the main thread, so that every ``with`` block (staging run directories,
caches) cleans up on the way out. The exception can be lost before it gets
there:

* in a finalizer (a ``__del__``, a weakref callback, the garbage collector),
  where Python cannot raise: it prints "Exception ignored in ..." and goes on.
  A SIGTERM that arrived during a tqdm bar's ``__del__`` was lost so, once,
  in tests/test_cli_runs.py: the run finished and exited 0. The stop is sent
  again from a timer thread a moment later;
* in code that catches it or turns it into another error. CPython 3.11's
  ``shutil.rmtree``, stopped between closing a directory and noting it
  closed, closes it again and raises "Bad file descriptor" in place of the
  stop (57 of 3,000 stops landing in an rmtree, measured); a library's bare
  ``except:`` drops it. A forward step once sealed every session and exited
  0 so (tests/test_forward.py). The handler remembers the stop:
  :func:`check`, where a day or a session begins, raises it again, and
  :func:`received` tells a command that the error it ends on stands for it.

A signal is the whole process's, so what was received is kept here, from
:func:`install` to its undo.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Mapping

#: how long a swallowed signal waits to be sent again: sent at once, it lands
#: in the hook itself, where Python loses it for good
RESEND_AFTER_S = 0.05

#: the stops received since :func:`install` (the signal's exception class)
_received: list[type[BaseException]] = []


def install(stops: Mapping[int, type[BaseException]]) -> Callable[[], None]:
    """Make each signal of ``stops`` raise its exception in the main thread and
    remember it (a signal the process inherited ignored stays ignored), and
    send a stop that a finalizer swallowed again. Returns the undo: it waits
    for the signals already scheduled (so that they arrive while these
    handlers still hold), then puts the handlers and hook back and forgets
    what was received. Raises ValueError outside the main thread."""

    def handler(signum, frame) -> None:
        _received.append(stops[signum])
        raise stops[signum]()

    previous = {}
    for signum in stops:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, handler)
    undo_hook = _resend_swallowed({stop: signum for signum, stop in stops.items()})

    def undo() -> None:
        try:
            undo_hook()
        finally:
            for signum, before in previous.items():
                signal.signal(signum, before)
            forget()

    return undo


def received() -> type[BaseException] | None:
    """The stop last received (its exception class), or None: an error a
    command ends on after it stands for the stop."""
    return _received[-1] if _received else None


def check() -> None:
    """Raise the stop received if it was lost on its way out (swallowed, or
    turned into an error something handled): called where a day or a forward
    session begins, so a lost stop ends the command there."""
    if _received:
        raise _received[-1]()


@contextmanager
def held() -> Iterator[None]:
    """Hold SIGTERM and SIGINT while a cleanup runs (a staging folder removed on the way out of a
    stop): one that arrives is remembered, not raised inside it, and sent again once it is done. A
    stop swallowed by a finalizer is raised again at the next day (:func:`check`) and also sent
    again by a timer: the second landed inside the first's cleanup, ended ``shutil.rmtree`` half
    way and left the folder. Outside the main thread (no handler can be set there) it holds
    nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for signum, handler in before.items():
        if callable(handler):  # a Python handler (ours): the default and an ignored signal stay as they are
            signal.signal(signum, lambda s, frame: got.append(s))
    try:
        yield
    finally:
        for signum, handler in before.items():
            if callable(handler):
                signal.signal(signum, handler)
        for signum in dict.fromkeys(got):
            signal.raise_signal(signum)


def forget() -> None:
    """Forget the stops received: an experiment's worker process that reported
    its unit stopped takes the next one afresh."""
    _received.clear()


def _resend_swallowed(signals: Mapping[type[BaseException], int]) -> Callable[[], None]:
    """Install a ``sys.unraisablehook`` that sends ``signals[type(exc)]`` to
    this process again when a finalizer swallowed ``exc``; any other
    unraisable exception goes to the hook that was there before. Returns the
    undo: it waits for the signals already scheduled, then puts the previous
    hook back."""
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
