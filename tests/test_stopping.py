"""A stop signal lost on its way out still stops (fincon.stopping): in a finalizer, in a library.

Python cannot raise an exception in a ``__del__``: it prints "Exception
ignored in ..." and goes on. A SIGTERM that arrived during a tqdm bar's
``__del__`` (once, in tests/test_cli_runs.py) let the run finish and exit 0.
Each test runs, in a fresh process, an object whose ``__del__`` signals its
own process, so the handler's exception is raised inside the finalizer;
then a 20 s sleep that only a signal sent again interrupts."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

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


#: python source: lose(how) sends this process SIGTERM, then loses the stop as a library may: "swallow" (a
#: bare except) or "ebadf" (CPython 3.11's shutil.rmtree, stopped between two lines, raises EBADF in its place)
LOSE = """
import errno, os, signal, sys, time
def lose(how):
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(20)
    except BaseException:
        if how == "ebadf":
            raise OSError(errno.EBADF, "Bad file descriptor")
"""
#: a backtest whose third day's record sends the run SIGTERM and loses the stop; python -c ARGS
LOST_IN_A_DAY = (
    LOSE
    + """
from fincon.cli.main import main
from fincon.engine import backtest
record, days = backtest._Loop._record_decision, []
def recorded(self, *args):
    record(self, *args)
    days.append(1)
    if len(days) == 3:
        lose(sys.argv[1])
backtest._Loop._record_decision = recorded
sys.exit(main(["backtest", "--ticker", "TSLA", "--strategy", "buy-and-hold", "--start", "2022-10-05",
               "--end", "2022-11-30", "--out", "runs", "--no-progress"]))
"""
)


@pytest.mark.slow
def test_a_backtest_stops_on_a_sigterm_a_library_swallowed_or_turned_into_an_error(tmp_path):
    """The run ends at the next day with 143 and leaves no folder. Before the fix: exit 0 with the whole
    run written (swallowed), and a traceback of 'OSError: Bad file descriptor' with exit 1 (ebadf)."""
    for lost in ("swallow", "ebadf"):
        res = subprocess.run([sys.executable, "-c", LOST_IN_A_DAY, lost], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120)  # fmt: skip
        assert (res.returncode, res.stderr) == (143, "fincon: terminated; partial output removed\n"), lost
        assert not (tmp_path / "runs").exists()


def test_an_experiments_status_says_interrupted_when_a_stop_became_an_error(tmp_path):
    """A study's status file said 'failed' with the error's text when a stop came out as another error
    (resume would have read a failure the user did not have)."""
    lines = _run(
        """
import errno, json
from pathlib import Path
from fincon.cli.main import Terminated, _stoppable
from fincon.errors import FinconError
from fincon.workflow.status import marking
signal.signal(signal.SIGINT, signal.SIG_IGN)
marker = Path(%r) / "status.json"
try:
    with _stoppable(), marking(marker, {}):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(20)
        except Terminated:
            raise FinconError("cannot write: Bad file descriptor")
except Terminated as exc:
    print(type(exc.__cause__).__name__, json.loads(marker.read_text())["status"])
"""
        % str(tmp_path)
    )
    assert lines == ["FinconError interrupted"]


def test_an_experiment_worker_reports_a_stop_that_became_an_error_as_the_stop():
    """Before the fix the unit failed with 'OSError: Bad file descriptor' (a bug to report, not a stop to
    resume from); the worker then takes its next unit afresh."""
    lines = _run(
        """
import errno
from fincon.workflow.process_pool import _Stopped, _run, _worker_init
_worker_init()
def stopped_in_rmtree():
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(20)
    except _Stopped:
        raise OSError(errno.EBADF, "Bad file descriptor")
status, failure = _run((0, stopped_in_rmtree))
print(status, failure.message)
print(*_run((1, lambda: "next")))
"""
    )
    assert lines == [
        "failed its worker process was terminated (SIGTERM) before the unit finished; rerun the same command to resume",
        "ok next",
    ]


def test_a_second_stop_during_the_staging_removal_still_removes_it(tmp_path):
    """A run stopped by SIGTERM exited 143, said "partial output removed", and left its staging folder
    (once in 1,321 tests, tests/test_cli_runs.py): a stop swallowed by a finalizer is raised again at
    the next day (stopping.check) and also sent again by a timer, and the second landed inside the
    first's cleanup, ending shutil.rmtree half way. A stop that arrives while a staging folder is
    removed is held until it is gone, then raised. Here the stop is sent from inside the removal."""
    lines = _run(
        f"""
import shutil
from pathlib import Path
from fincon.cli.main import Terminated, _stoppable
from fincon.engine import rundir

real = shutil.rmtree
def interrupted(path, *a, **k):  # the second stop arrives as the removal begins
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(100_000):  # its handler runs here
        pass
    return real(path, *a, **k)
rundir.shutil.rmtree = interrupted
try:
    with _stoppable():
        with rundir.RunDir(Path({str(tmp_path / "run")!r})) as run:
            (run.path / "equity.csv").write_text("date,value")
            raise Terminated()
except Terminated:
    print("Terminated", sorted(p.name for p in Path({str(tmp_path)!r}).iterdir()))
"""
    )
    assert lines == ["Terminated []"]


@contextlib.contextmanager
def stopped_mid_swap(monkeypatch):
    """A SIGTERM sent as a ``--replace`` has moved the earlier folder aside (the first of its two
    renames), with fincon's stop handler installed; yields the stop's exception class."""
    import os
    import signal
    from pathlib import Path

    from fincon import stopping
    from fincon.cli.main import Terminated

    rename = Path.rename

    def stopped_after_first(self, target):
        got = rename(self, target)
        if ".replaced-" in str(target):
            os.kill(os.getpid(), signal.SIGTERM)
        return got

    with monkeypatch.context() as m:
        m.setattr(Path, "rename", stopped_after_first)
        undo = stopping.install({signal.SIGTERM: Terminated})
        try:
            yield Terminated
        finally:
            undo()


def test_a_stop_between_the_two_renames_of_a_replace_keeps_a_folder_at_out(tmp_path, monkeypatch):
    """Found in review: a SIGTERM right after ``--replace`` moved the user's dataset aside (before the
    new one took its place) ended the command with "partial output removed" and nothing at --out, the old
    dataset hidden as .NAME.replaced-PID. The stop waits for the pair of renames, then stops."""

    from fincon.ownership import OwnedFolder

    folder = OwnedFolder("dataset", "mark.json", "test", lambda p: {"mark.json", "a.txt"})
    out = tmp_path / "ds"
    out.mkdir()
    (out / "mark.json").write_text("{}")
    (out / "a.txt").write_text("old")
    staging = folder.staging(out)
    (staging / "mark.json").write_text("{}")
    (staging / "a.txt").write_text("new")
    with stopped_mid_swap(monkeypatch) as stop, pytest.raises(stop):
        folder.swap_in(staging, out, replace=True)
    assert (out / "a.txt").read_text() == "new" and not list(tmp_path.glob(".ds.*"))


def test_a_stop_or_a_kill_inside_a_runs_replace_keeps_a_run_at_out(tmp_path, monkeypatch):
    """Found in review: ``backtest --replace`` moved the earlier run aside, then a SIGTERM before the new
    one took its name removed the new run and left the earlier one hidden as .X.replaced-PID (a later run
    treated X as new and never swept it); a SIGKILL there left both, and the next run removed the new one.
    A stop waits for the swap; a run moved aside by a killed process is put back."""
    import os

    from fincon.engine import rundir

    def earlier(name):
        with rundir.RunDir(tmp_path / name) as run:
            (run.path / "equity.csv").write_text("old")
            rundir.write_json(run.path / rundir.MANIFEST, {"config_sha256": "", "data_sha256": {}, "packages": {}})
            run.commit()

    earlier("x")
    with stopped_mid_swap(monkeypatch) as stop, pytest.raises(stop):
        with rundir.RunDir(tmp_path / "x", replace=True) as run:
            (run.path / "equity.csv").write_text("new")
            rundir.write_json(run.path / rundir.MANIFEST, {"config_sha256": "", "data_sha256": {}, "packages": {}})
            run.commit()
    assert (tmp_path / "x" / "equity.csv").read_text() == "new" and sorted(os.listdir(tmp_path)) == ["x"]
    # killed between the renames (a process that is gone): the earlier run is put back by the next run
    earlier("y")
    gone = 2**22 + 17  # no such process
    (tmp_path / "y").rename(tmp_path / f".y.replaced-{gone}@{rundir._host()}")
    (tmp_path / f".y.partial-{gone}@{rundir._host()}").mkdir()
    rundir.sweep_stale_partials(tmp_path)
    assert (tmp_path / "y" / "equity.csv").read_text() == "old" and sorted(os.listdir(tmp_path)) == ["x", "y"]


def test_a_stop_while_score_draws_the_charts_leaves_a_replay_the_next_step_replaces(tmp_path, monkeypatch):
    """Found in review: ``forward score`` drew the replay's charts and only then listed them in its
    manifest; a stop in between (6.5 s of a 32 s score) left charts no manifest named, and every later
    ``forward step`` refused the replay ("which no fincon run wrote"). Listed first, drawn after."""
    from fincon.config import RunConfig
    from fincon.engine import record, rundir
    from fincon.workflow.runner import run_config

    cfg = RunConfig.model_validate(
        {"tickers": ["TSLA"], "strategies": ["sma-cross", "buy-and-hold"], "start": "2022-10-03", "end": "2022-10-21"}
    )
    out = tmp_path / "replay"
    run_config(cfg, out, progress=False, ledger=None, plots=False)
    drawn = []

    def stopped(curves, path, *a, **k):
        drawn.append(path)
        Path(path).write_bytes(b"half a png")
        raise KeyboardInterrupt

    monkeypatch.setattr(record, "draw", stopped)
    with pytest.raises(KeyboardInterrupt):
        record.draw_charts(out, "t", ["sma-cross", "buy-and-hold"])
    assert drawn == [out / "sma-cross" / "equity.png"]
    rundir.check_replaceable(out, "backtest")  # the half-drawn chart is the run's own: no refusal


def test_two_replace_runs_on_one_out_keep_both(tmp_path):
    """Found in review: two ``backtest --replace`` on one --out at once both said their run was there;
    the second deleted the first's, committed seconds before, as "the earlier run". A run replaces the
    folder that was at --out when it started, and takes a free name when another took its place."""
    from fincon.engine import rundir

    def run(replace, text):
        r = rundir.RunDir(tmp_path / "x", replace=replace)
        (r.path / "equity.csv").write_text(text)
        rundir.write_json(r.path / rundir.MANIFEST, {"config_sha256": "", "data_sha256": {}, "packages": {}})
        return r

    run(False, "earlier").commit()
    first = run(True, "first")
    first.staging = first.staging.rename(tmp_path / ".x.partial-first")  # another process's staging name
    second = run(True, "second")
    assert first.commit() == tmp_path / "x"  # the earlier run replaced, as asked
    assert second.commit() == tmp_path / "x-2"  # the first's run is not the one it was asked to replace
    assert (tmp_path / "x" / "equity.csv").read_text() == "first"
    assert (tmp_path / "x-2" / "equity.csv").read_text() == "second"
    assert run(True, "third").commit() == tmp_path / "x"  # and a replace of what is there now still works


def test_two_replace_imports_on_one_out_keep_the_first(tmp_path):
    """Found in review (the sibling of backtest's): two `data sample --replace` on one --out at once both
    printed "wrote ... to ev"; the second deleted the first's new corpus as "the earlier one". A dataset or
    corpus replaces what --out held when its command began; another's is kept, in one line."""
    from fincon.errors import ConfigError
    from fincon.ownership import OwnedFolder

    folder = OwnedFolder("dataset", "mark.json", "test", lambda p: {"mark.json", "a.txt"})
    out = tmp_path / "ds"
    out.mkdir()
    (out / "mark.json").write_text("{}")
    (out / "a.txt").write_text("earlier")

    def staged(text):
        s = folder.staging(out)
        (s / "mark.json").write_text("{}")
        (s / "a.txt").write_text(text)
        return s

    first = staged("first").rename(tmp_path / ".ds.partial-first")  # another process's staging name
    second = staged("second")
    folder.swap_in(first, out, replace=True)
    with pytest.raises(
        ConfigError, match="was written by another command while this one ran; nothing was changed"
    ) as e:
        folder.swap_in(second, out, replace=True)
    assert str(e.value).endswith("(run the same command again to replace it)")  # not "pass --replace": it was
    assert (out / "a.txt").read_text() == "first" and sorted(p.name for p in out.iterdir()) == ["a.txt", "mark.json"]
    folder.swap_in(staged("third"), out, replace=True)  # a replace of what is there now still works
    assert (out / "a.txt").read_text() == "third"
