"""Units in parallel in local processes: ``fincon experiment --workers N``.

The local executor with more than one worker. Each unit of a phase runs in
one of N worker processes on this machine (``multiprocessing``, *spawn*:
fresh interpreters, no forked chromadb or BLAS threads), and the phase ends
when every unit has. Why not Ray on one machine: a local Ray cluster costs
5-6 s to start and stop, its own daemons share the same cores, and it needs
the ``ray`` extra; here a phase costs the workers' imports (about 3 s each,
once per :data:`~fincon.workflow.unit_failures.UNITS_PER_WORKER` units of
a worker).

What a unit sees is what it sees in the serial executor: the driver's
working directory and environment (spawn copies them), its own run
directory, and the LLM cache file shared through SQLite's own locking (safe
for processes on one machine; see :mod:`fincon.llm.cache`). So the files are
byte-identical to a serial run's (``tests/test_experiment_pool.py``).

Failures are reported as the Ray executor reports them: the phase runs to
its end, every other unit keeps its results, then the first failure comes
back as one line naming its unit. Stopping: on Ctrl-C or SIGTERM the driver
terminates its workers; a worker ends its unit on the way out (its staging
run directory is removed, as in a serial run) and starts no unit queued to
it (one did, and ran to its end before the command exited); one still
running after 30 s is killed, and what a killed worker left is swept by the
next run. A worker whose driver is killed stops the same way (it held its
units' locks and waited on its queue for ever).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Sequence

from fincon import stopping
from fincon.errors import FinconError
from fincon.workflow.unit_failures import UNITS_PER_WORKER, Task, UnitFailure, one_line, phase_error


class _Stopped(SystemExit):
    """SIGTERM in a worker (exit status 143)."""

    def __init__(self) -> None:
        super().__init__(143)


#: in a worker: the driver's "stop" (set before it terminates its workers), and whether the driver
#: is gone (killed: the worker would hold its units' locks and wait on its queue for ever)
_DRIVER_STOP: Any = None
_ORPHANED = threading.Event()


def _worker_init(stop: Any = None) -> None:
    """In each worker: Ctrl-C is the driver's to handle (it stops the
    workers); SIGTERM (how the driver stops them) unwinds the unit so its
    ``with`` blocks clean up, also when it was lost on its way out
    (:mod:`fincon.stopping`; for the worker's lifetime). A worker whose
    driver dies (SIGKILL, the out-of-memory killer) stops as if terminated."""
    global _DRIVER_STOP
    _DRIVER_STOP = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stopping.install({signal.SIGTERM: _Stopped})
    threading.Thread(target=_watch_driver, args=(os.getppid(),), daemon=True).start()


def _watch_driver(driver: int, every: float = 1.0) -> None:
    while os.getppid() == driver:
        time.sleep(every)
    _ORPHANED.set()
    os.kill(os.getpid(), signal.SIGTERM)


def _stop_asked() -> bool:
    return _ORPHANED.is_set() or (_DRIVER_STOP is not None and _DRIVER_STOP.is_set())


def _run(item: tuple[int, Task]) -> tuple[str, Any]:
    _, task = item
    if _stop_asked():  # queued before the stop: the pool hands a worker its next unit as the last one ends
        return "failed", UnitFailure("not started: the command was stopped; rerun the same command to resume", 1, "")
    try:
        return "ok", task()
    except BaseException as exc:
        if isinstance(exc, SystemExit) or stopping.received():  # SIGTERM to this worker alone (the driver's
            return "failed", UnitFailure(  # own stop ends the driver first), also one turned into an error
                "its worker process was terminated (SIGTERM) before the unit finished; rerun the same command to "
                "resume",
                1,
                "",
            )
        if isinstance(exc, FinconError):
            return "failed", UnitFailure(" ".join(str(exc).split()), exc.exit_code, traceback.format_exc(), fincon=True)
        if isinstance(exc, Exception):
            return "failed", UnitFailure(f"{type(exc).__name__}: {one_line(exc)}", 1, traceback.format_exc())
        raise
    finally:
        stopping.forget()  # a worker stopped alone takes its next unit afresh
        if _ORPHANED.is_set():  # its unit cleaned up; nobody reads its answer
            os._exit(143)


class ProcessPool:
    """An executor of ``workers`` local processes; use it as a context
    manager. A phase's tasks run in batches of ``workers`` x
    :data:`~fincon.workflow.unit_failures.UNITS_PER_WORKER`, each batch in a
    fresh pool, so a worker process runs at most that many units.
    (``max_tasks_per_child`` would say the same, but on Python 3.11 a pool
    that replaces a worker with tasks still queued can hang: CPython
    gh-115634.)"""

    def __init__(self, workers: int):
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._stop: Any = None

    def __enter__(self) -> "ProcessPool":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._close(stop=exc_type is not None)

    def _close(self, stop: bool) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if not stop:
            pool.shutdown(wait=True)
            return
        workers = [p for p in multiprocessing.active_children() if p.name.startswith("SpawnProcess")]
        if self._stop is not None:
            self._stop.set()  # a unit queued to a worker is not started (_run)
        pool.shutdown(wait=False, cancel_futures=True)
        for p in workers:  # each ends its unit on the way out (_worker_init)
            p.terminate()
        for p in workers:
            p.join(timeout=30)
        for p in workers:  # one that did not end its unit in time is not left running it
            if p.is_alive():
                p.kill()
                p.join(timeout=5)

    def __call__(self, tasks: Sequence[Task], done: Callable[[int, Any], None]) -> None:
        names = [str(getattr(t, "name", None) or f"task {i + 1}") for i, t in enumerate(tasks)]
        failures: list[tuple[str, UnitFailure]] = []
        batch = self.workers * UNITS_PER_WORKER
        try:
            for lo in range(0, len(tasks), batch):
                spawn = multiprocessing.get_context("spawn")
                self._stop = spawn.Event()
                self._pool = ProcessPoolExecutor(
                    self.workers, mp_context=spawn, initializer=_worker_init, initargs=(self._stop,)
                )
                futures = {self._pool.submit(_run, (i, tasks[i])): i for i in range(lo, min(lo + batch, len(tasks)))}
                broken = False
                for fut in as_completed(futures):
                    i = futures[fut]
                    try:
                        status, value = fut.result()
                    except BrokenProcessPool as exc:  # a worker died (killed, out of memory)
                        broken = True
                        # which unit's worker died is not known: every unit the pool lost is named as lost
                        status, value = (
                            "failed",
                            UnitFailure(
                                f"a worker process died while this unit was unfinished ({one_line(exc)})",
                                1,
                                "",
                                fincon=True,
                            ),
                        )
                    if status == "ok":
                        done(i, value)
                    else:
                        failures.append((names[i], value))
                self._close(stop=broken)
        except BaseException:
            self._close(stop=True)
            raise
        if failures:
            raise phase_error(failures, "a worker process")
