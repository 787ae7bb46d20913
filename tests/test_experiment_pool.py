"""``fincon experiment --workers N`` (issue 22, item 5): the local executor
with worker processes. The same files as one process, failures reported as
one line naming the unit while the other units finish, and SIGTERM stops
the workers and leaves no staging directory behind."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fincon.cli.main import main
from fincon.errors import ConfigError, FinconError
from fincon.testing import SMALL_EXPERIMENT as ARGS, TINY_EXPERIMENT as TINY, strict_json
from fincon.testing.badinput import captured
from fincon.workflow.experiment import load_experiment
from fincon.workflow.process_pool import ProcessPool


def run(args: list[str]) -> tuple[int, str, str]:
    return captured(main, args)


def files(root: Path) -> dict[str, bytes]:
    """Every file but the chromadb stores (random segment ids), with the
    directory's own path made relative."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and "memory" not in rel.parts:
            out[str(rel)] = p.read_bytes().replace(str(root.absolute()).encode(), b"<experiment>")
    return out


@pytest.mark.slow
def test_two_workers_write_the_same_files_as_one_process(tmp_path, tiny_experiment):
    one, two = tiny_experiment[0], tmp_path / "two"  # one process: the session's tiny experiment (conftest.py)
    code, text2, err = run(TINY + ["--out", str(two), "--json", "--workers", "2"])
    assert code == 0, err
    ran = json.loads(text2)["ran"]
    assert sorted(ran) == sorted(strict_json(tiny_experiment[1])["ran"]) and len(ran) == 5  # 1 + 2 trainings + 2 tests
    a, b = files(one), files(two)
    assert sorted(a) == sorted(b) and "train/full-r1/episodes.jsonl" in a and "test/no-cvar-r1/equity.csv" in a
    for name in a:
        assert a[name] == b[name], name


def _named(name: str, fn, *args):
    task = functools.partial(fn, *args)
    task.name = name  # type: ignore[attr-defined]
    return task


def _refuse(why: str):
    from fincon.errors import DataError

    raise DataError(why)


def test_the_serial_executor_names_a_failing_unit_too():
    """A damaged beliefs.json of a test unit read "--beliefs: cannot read ...": a flag the user never
    gave, and no unit named, where the workers and Ray name it."""
    from fincon.errors import DataError
    from fincon.workflow.executors import serial

    done: list = []
    with pytest.raises(DataError) as info:
        serial([_named("train/full-r1", str, "ok"), _named("test/full-r2", _refuse, "--beliefs: cannot read")],
               lambda i, r: done.append(r))  # fmt: skip
    assert str(info.value) == "test/full-r2: --beliefs: cannot read" and info.value.exit_code == 2
    assert done == ["ok"]


def test_a_failing_unit_is_named_and_the_others_finish():
    done: list[tuple[int, object]] = []
    tasks = [
        _named("test/full-r1", int, "not a number"),
        _named("train/full-r1", str, "fine"),
        _named("test/full-r2", int, "12x"),
        _named("test/full-r3", str, "fine too"),
    ]
    with ProcessPool(2) as pool:
        with pytest.raises(FinconError) as info:
            pool(tasks, lambda i, r: done.append((i, r)))
        msg = str(info.value)
        assert msg.startswith("test/full-r") and ": ValueError: invalid literal for int()" in msg and "\n" not in msg
        assert "1 more failed: test/full-r" in msg and info.value.exit_code == 1
        assert sorted(done) == [(1, "fine"), (3, "fine too")]  # a failure does not stop the others
        got: list = []
        pool([str, functools.partial(str, 5)], lambda i, r: got.append((i, r)))  # the next phase runs
        assert sorted(got) == [(0, ""), (1, "5")]


def test_a_worker_that_dies_fails_its_unit_in_one_line():
    with ProcessPool(1) as pool:
        with pytest.raises(FinconError) as info:
            pool([_named("test/full-r1", os._exit, 9)], lambda i, r: None)
        # which unit's worker died is not known (a unit beside it was blamed): each unit lost is named as
        # lost, with no advice to read a traceback there is none of
        msg = str(info.value)
        assert msg.startswith("test/full-r1: a worker process died while this unit was unfinished") and "-v" not in msg
        assert info.value.exit_code == 1
        got: list = []
        pool([functools.partial(str, 7)], lambda i, r: got.append(r))  # a new pool for the next phase
        assert got == ["7"]


def test_workers_config():
    exp = load_experiment(None, {"executor.workers": 2})
    assert exp.executor.kind == "local" and exp.executor.workers == 2
    for tree, word in [
        ({"executor": {"kind": "ray", "workers": 2}}, "--ray-cpus"),
        ({"executor": {"kind": "local", "workers": 0}}, "executor.workers"),
    ]:
        with pytest.raises(ConfigError, match=word):
            load_experiment(None, tree)


@pytest.mark.slow
def test_sigterm_stops_the_workers_and_leaves_no_staging_dir(tmp_path):
    out = tmp_path / "exp"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fincon.cli.main", *ARGS, "--out", str(out), "--workers", "2", "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120

    def staging() -> list[Path]:
        return [p for p in out.rglob("*") if ".partial" in p.name] if out.is_dir() else []

    while time.time() < deadline and not staging():
        time.sleep(0.2)
    assert staging(), "no unit started"
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(children) >= 2  # the two workers (and multiprocessing's resource tracker)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert staging() == []  # each worker removed its staging dir

    def running(pid: str) -> str:
        """The command line of a live (not zombie) process, else ''."""
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            return "" if state == "Z" else Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
        except OSError:
            return ""

    time.sleep(2)
    alive = [running(c) for c in children if running(c)]
    assert alive == [], "processes outlived the command"


def test_a_phase_longer_than_a_workers_share_runs_to_its_end():
    """More tasks than the workers may run before they are replaced (the
    pool is renewed between batches; Python 3.11's max_tasks_per_child could
    hang here)."""
    from fincon.workflow.unit_failures import UNITS_PER_WORKER

    n = 2 * UNITS_PER_WORKER * 2 + 3
    got: list = []
    with ProcessPool(2) as pool:
        pool([functools.partial(str, k) for k in range(n)], lambda i, r: got.append((i, r)))
    assert sorted(got) == [(k, str(k)) for k in range(n)]


_DRIVER = """
import functools, os, signal, sys
from fincon import stopping
from fincon.workflow.process_pool import ProcessPool
stopping.install({signal.SIGTERM: KeyboardInterrupt})
d = sys.argv[1]
if sys.argv[2] == "python":  # a unit in Python code: a signal reaches it at once
    import time
    tasks = [functools.partial(time.sleep, 60) for i in range(4)]
else:  # a unit that says it started, then waits outside Python
    tasks = [functools.partial(os.system, f"touch {d}/{i}; sleep {sys.argv[2]}") for i in range(4)]
with ProcessPool(2) as pool:
    pool(tasks, lambda i, r: open(f"{d}/done-{i}", "w").close())
"""


def _children(pid: int) -> list[str]:
    return subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()


def _alive(pid: str) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_a_stopped_driver_starts_no_queued_unit_and_a_killed_ones_workers_stop(tmp_path):
    """Found in review: on Ctrl-C or SIGTERM with --workers 2 the units queued to the workers started
    after the stop and ran to their end before the command exited (20-72 s), and a driver killed
    (SIGKILL, the out-of-memory killer) left its workers running for ever, holding their units' locks."""

    def started(d: Path) -> list[str]:
        return sorted(p.name for p in d.iterdir() if not p.name.startswith("done"))

    stopped = tmp_path / "stopped"
    stopped.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", _DRIVER, str(stopped), "3"], stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and len(started(stopped)) < 2:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    time.sleep(4)  # a unit queued and started would have touched its file by now
    assert started(stopped) == ["0", "1"]

    proc = subprocess.Popen([sys.executable, "-c", _DRIVER, str(tmp_path), "python"])
    while time.time() < deadline + 60 and len(_children(proc.pid)) < 3:  # two workers, the resource tracker
        time.sleep(0.1)
    time.sleep(5)  # their imports done, each in its unit
    workers = _children(proc.pid)
    proc.kill()
    proc.wait(10)
    end = time.time() + 20
    while time.time() < end and any(_alive(w) for w in workers):
        time.sleep(0.2)
    assert workers and not any(_alive(w) for w in workers), "workers outlived their killed driver"
