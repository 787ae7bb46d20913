"""``fincon experiment --executor ray`` (issue 11, item 3): the same files as
the local executor, resume across executors, one-line failures naming the
unit, the LLM cache owned by the driver's machine, and Ray kept optional.

Ray is an optional extra: without it these tests are skipped, except under
CI, where a missing Ray fails them."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fincon.cli.main import main
from fincon.errors import ConfigError, FinconError
from fincon.testing.badinput import captured
from fincon.workflow.experiment import default_out, load_experiment
from fincon.workflow.ray_executor import RAY_MISSING, RayExecutor

if importlib.util.find_spec("ray") is None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("ray is not installed: pip install 'fincon[ray]' (the CI runs these tests)", pytrace=False)
    pytest.skip("ray is not installed (pip install 'fincon[ray]')", allow_module_level=True)

from fincon.testing import (
    SMALL_EXPERIMENT as ARGS,  # noqa: E402  (the small experiment of tests/test_experiment.py)
    TINY_EXPERIMENT as TINY,  # noqa: E402
    copy_experiment,  # noqa: E402
    setting,  # noqa: E402
)

RAY = ["--executor", "ray", "--ray-cpus", "2"]


def run(args: list[str]) -> tuple[int, str, str]:
    return captured(main, args)


def files(root: Path) -> dict[str, bytes]:
    """Every file of an experiment directory but the chromadb stores (memory/:
    random segment ids and timestamps, different between two local runs too),
    with the directory's own path (config.yaml names the beliefs it tests) made
    relative."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and "memory" not in rel.parts:
            out[str(rel)] = p.read_bytes().replace(str(root.absolute()).encode(), b"<experiment>")
    return out


@pytest.fixture(scope="module")
def both(tmp_path_factory, tiny_experiment, cluster):
    """The tiny experiment (5 units), once with each executor: the local one
    is the session's (conftest.py), copied here since a test below resumes it.
    The command runs on the module's cluster (a Ray session the caller opened
    is used as it is: RayExecutor), one start instead of one per command;
    tests/test_ray_leaves_nothing.py starts and stops clusters of its own."""
    root = tmp_path_factory.mktemp("exp-ray")
    local, ray = copy_experiment(tiny_experiment[0], root / "local"), root / "ray"
    code, text_ray, err = run(TINY + ["--out", str(ray), "--json"] + RAY)
    assert code == 0, err
    return local, ray, json.loads(tiny_experiment[1]), json.loads(text_ray), err


@pytest.mark.slow
def test_ray_writes_the_same_files_as_local(both):
    local, ray, obj, obj_ray, err = both
    assert err == ""  # no Ray chatter on the terminal
    assert sorted(obj_ray["ran"]) == sorted(obj["ran"]) and len(obj["ran"]) == 5  # 1 + 2 trainings + 2 tests
    assert (local / "results.json").read_bytes() == (ray / "results.json").read_bytes()
    a, b = files(local), files(ray)
    assert sorted(a) == sorted(b)
    assert any(k.endswith("equity.csv") for k in a) and "train/full-r1/episodes.jsonl" in a
    for name in a:
        assert a[name] == b[name], name
    import ray as ray_module

    assert ray_module.is_initialized()  # the caller's session is left as it was: the command did not stop it


@pytest.mark.slow
def test_resume_across_executors(both, cluster):
    local, ray, obj, _, _ = both
    before = (local / "results.json").read_bytes()
    # the executor is not part of the experiment's identity: either one resumes the other's directory
    code, text, err = run(TINY + ["--out", str(ray), "--json"])
    assert code == 0, err
    assert json.loads(text)["ran"] == []
    shutil.rmtree(ray / "test" / "no-cvar-r1")
    code, text, err = run(TINY + ["--out", str(ray), "--json"])  # a unit written by Ray, rebuilt here
    assert code == 0, err
    assert json.loads(text)["ran"] == ["test/no-cvar-r1"]
    train = local / "train" / "full-r1"  # a training stopped after its first episode
    shutil.rmtree(train / "episodes" / "ep-02")
    (train / "episodes.jsonl").write_text((train / "episodes.jsonl").read_text().splitlines(keepends=True)[0])
    (train / "train.json").write_text((train / "train.json").read_text().replace('"complete"', '"running"'))
    code, text, err = run(TINY + ["--out", str(local), "--json"] + RAY)
    assert code == 0, err
    assert json.loads(text)["ran"] == ["train/full-r1"]
    for d in (local, ray):
        assert (d / "results.json").read_bytes() == before
    a, b = files(local), files(ray)
    assert a == b


@pytest.mark.slow
def test_a_test_window_outside_the_data_is_refused_before_any_unit_runs(tmp_path):
    """No price data in the test window: the experiment checks every input
    before it writes anything (issue 19), so with Ray too the user gets one
    line, exit 2, and no experiment directory; no unit ran on a worker."""
    data = tmp_path / "data"
    data.mkdir()
    sample = Path(__file__).parents[1] / "fincon" / "data" / "sample" / "prices" / "TSLA.csv.gz"
    import gzip

    lines = gzip.decompress(sample.read_bytes()).decode().splitlines()
    (data / "TSLA.csv").write_text("\n".join([lines[0]] + [x for x in lines[1:] if x < "2022-05"]) + "\n")
    out = tmp_path / "exp"
    small = ["--repeats", "1", "--episodes", "1", "--ablations", "full", "--baselines", "buy-and-hold"]
    code, _, err = run(setting(ARGS, *small) + ["--out", str(out), "--data", str(data)] + RAY)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("fincon: error: TSLA: no data in 2022-05-02"), err
    assert not out.exists()


def _ask(path: str, answer: str) -> dict:
    """In a Ray worker: store an answer for a shared key and one of its own,
    and say what the cache holds and how it reached the file."""
    from fincon.llm.cache import SERVER_ENV, CallCache
    from fincon.llm.types import Message, SamplingParams

    cache = CallCache(path)
    fields = {
        "backend": "fake",
        "model": "m",
        "agent": "a",
        "messages": [Message(role="user", content="q")],
        "schema": {},
        "params": SamplingParams(),
        "prompt_tokens": 3,
        "completion_tokens": 2,
        "latency_s": 0.1,
    }
    shared = cache.put("shared", answer=answer, **fields).answer
    own = cache.put(f"own-{answer}", answer=answer, **fields).answer
    return {
        "shared": shared,
        "own": own,
        "read": cache.get("shared").answer,
        "size": len(cache),
        "through_driver": cache._server is not None and cache._conn is None,
        "server": os.environ.get(SERVER_ENV),
        "omp": os.environ.get("OMP_NUM_THREADS"),
    }


def _replay(path: str) -> None:
    from fincon.llm.cache import CallCache

    CallCache(path, "replay")


@pytest.fixture(scope="module")
def cluster():
    """One local cluster for the module, started now: the commands of the tests
    run on it (RayExecutor uses a session its caller opened as it is)."""
    with RayExecutor(cpus=2) as executor:  # imports Ray as fincon does (loopback only), before this module does
        from ray import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this module
        executor([str], lambda i, r: None)  # starts the session
        yield executor


def _named(name: str, fn, *args):
    task = functools.partial(fn, *args)
    task.name = name
    return task


@pytest.mark.slow
def test_llm_cache_is_owned_by_the_driver_first_writer_wins(cluster, tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    path = str(tmp_path / "cache" / "llm.sqlite")
    results: dict[int, dict] = {}
    cluster([_named("u1", _ask, path, "one"), _named("u2", _ask, path, "two")], results.__setitem__)
    assert sorted(results) == [0, 1]
    winner = results[0]["shared"]
    assert winner in ("one", "two")
    for r in results.values():
        assert r["through_driver"] and r["server"]
        assert r["shared"] == r["read"] == winner  # both units act on the answer the file holds
        assert r["omp"] is None  # Ray's OMP_NUM_THREADS=1 is undone: the driver had none
    assert (results[0]["own"], results[1]["own"]) == ("one", "two")
    from fincon.llm.cache import CallCache

    cache = CallCache(path)
    assert len(cache) == 3 and cache.get("shared").answer == winner
    assert {r["key"] for r in cache.rows()} == {"shared", "own-one", "own-two"}
    # a cache error in a worker (replay of a missing file) is the unit's one-line error
    with pytest.raises(FinconError) as info:
        cluster([_named("test/full-r1", _replay, str(tmp_path / "missing.sqlite"))], lambda i, r: None)
    msg = str(info.value)
    assert msg.startswith("test/full-r1: replay needs a recorded cache") and "\n" not in msg
    assert info.value.exit_code == 2


@pytest.mark.slow
def test_a_bug_in_a_unit_is_reported_with_its_name(cluster):
    done: list[int] = []
    tasks = [
        _named("test/full-r1", int, "not a number"),
        _named("train/full-r1", str, "fine"),
        _named("test/full-r2", int, "12x"),
        _named("test/full-r3", str, "fine too"),
    ]
    with pytest.raises(FinconError) as info:
        cluster(tasks, lambda i, r: done.append(i))
    msg = str(info.value)
    assert msg.startswith("test/full-r") and ": ValueError: invalid literal for int()" in msg and "\n" not in msg
    assert "traceback" in msg and "1 more failed: test/full-r" in msg and info.value.exit_code == 1
    assert sorted(done) == [1, 3]  # a failure does not stop the others
    # the executor runs its next phase
    got: list = []
    cluster([str, functools.partial(str, 5)], lambda i, r: got.append((i, r)))
    assert sorted(got) == [(0, ""), (1, "5")]


@pytest.mark.slow
def test_the_papers_baselines_run_on_ray_with_the_same_files(cluster, tmp_path):
    """Issue 33 item 4: a rolling evaluation with an RL agent and the FinMem
    trader among the baselines writes the same files on Ray as in one process."""
    from fincon.workflow.rolling import run_rolling

    exp = load_experiment(
        None,
        {"team.brain": "rules", "rolling.window": "3m", "rolling.step": "3m", "rolling.start": "2022-07-01",
         "rolling.end": "2022-09-30", "rolling.universes": ["TSLA"], "repeats": 1, "episodes": 1,
         "ablations": ["full"], "baselines": ["buy-and-hold", "a2c", "finmem"],
         "strategy_params.a2c.timesteps": 300, "strategy_params.finmem.brain": "rules", "bootstrap_reps": 1000},
    )  # fmt: skip
    run_rolling(exp, tmp_path / "local", progress=False)
    run_rolling(exp, tmp_path / "ray", progress=False, executor=cluster)
    a, b = files(tmp_path / "local"), files(tmp_path / "ray")  # rl_model.zip too (its entries kept write times)
    assert sorted(a) == sorted(b) and any(k.endswith("a2c/rl_training.csv") for k in a)
    for name in a:
        assert a[name] == b[name], name


def test_help_imports_no_ray():
    code = (
        "import sys\nfrom fincon.cli.main import main\ntry:\n    main(['experiment', '--help'])\n"
        "except SystemExit:\n    pass\nprint('RAY' if 'ray' in sys.modules else 'no ray', file=sys.stderr)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "--executor {local,ray}" in res.stdout and "--ray-address" in res.stdout
    assert res.stderr.strip().endswith("no ray"), res.stderr


def test_missing_ray_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if it were not installed
    out = tmp_path / "exp"
    code, _, err = run(ARGS + ["--out", str(out)] + RAY)
    assert code == 2 and err == f"fincon: error: {RAY_MISSING}\n"
    assert "pip install 'fincon[ray]'" in err
    assert not out.exists()  # nothing started


def test_executor_config():
    exp = load_experiment(None, {"executor": "ray"})
    assert exp.executor.kind == "ray" and exp.executor.address is None
    exp = load_experiment(None, {"executor.kind": "ray", "executor.address": "auto"})
    assert exp.executor.address == "auto"
    # not part of the experiment's identity
    assert "executor" not in exp.model_dump() and default_out(exp) == default_out(load_experiment(None, {}))
    for tree, word in [
        ({"executor": {"kind": "spark"}}, "executor.kind"),
        ({"executor": {"kind": "local", "address": "auto"}}, "--executor ray"),
        ({"executor": {"kind": "local", "cpus": 4}}, "--ray-cpus"),
        ({"executor": {"kind": "ray", "cpus": 0}}, "executor.cpus"),
        ({"executor": {"kind": "ray", "address": "auto", "cpus": 2}}, "its own size"),
        ({"executor": {"kind": "ray", "address": "ray://head:10001"}}, "Ray Client"),
        ({"executor": {"kind": "ray", "adress": "auto"}}, "adress"),
    ]:
        with pytest.raises(ConfigError, match=word):
            load_experiment(None, tree)


def test_cli_flags_reach_the_executor(tmp_path):
    code, _, err = run(ARGS + ["--out", str(tmp_path / "x"), "--ray-cpus", "2"])
    assert code == 2 and "--ray-cpus" in err and "--executor ray" in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_sweep_keeps_another_machines_staging_dir(tmp_path):
    """On a filesystem shared by a Ray cluster, a staging dir whose process runs
    on another machine is not this machine's to sweep (its PID means nothing here)."""
    from fincon.engine.rundir import RunDir, _host, sweep_stale_partials

    theirs = tmp_path / ".full-r1.partial-999999@another-node"
    mine = tmp_path / f".full-r2.partial-999999@{_host()}"
    old = tmp_path / ".full-r3.partial-999999"  # written before staging dirs named their machine
    for d in (theirs, mine, old):
        d.mkdir()
    with contextlib.redirect_stderr(io.StringIO()):
        assert sorted(sweep_stale_partials(tmp_path)) == sorted([mine, old])
    assert theirs.is_dir()
    run_dir = RunDir(tmp_path / "full-r4")
    assert run_dir.path.name == f".full-r4.partial-{os.getpid()}@{_host()}"
    run_dir.abort()


def test_a_unit_on_a_cluster_started_apart_counts_in_the_drivers_ledger(tmp_path, monkeypatch):
    """Found in review: with --ray-address a unit ran in a worker whose environment was the cluster's, so
    --ledger LR.sqlite was never written (the trials went to the worker's default ledger, and the driver
    said it held 0 trials). The driver's FINCON_LEDGER is handed to each unit."""
    import os

    from ray import cloudpickle

    from fincon.workflow import ray_executor

    monkeypatch.setenv("FINCON_LEDGER", str(tmp_path / "LR.sqlite"))
    env = {k: os.environ.get(k) for k in ray_executor._DRIVER_ENV}  # what the driver sends
    monkeypatch.delenv("FINCON_LEDGER")  # the worker's own environment
    before, cwd = dict(os.environ), os.getcwd()
    try:  # _work sets the process's environment and folder, as a Ray worker's: put back for the next tests
        task = cloudpickle.dumps(lambda: os.environ.get("FINCON_LEDGER"))
        status, seen = ray_executor._work(task, str(tmp_path), env, "")
    finally:
        os.environ.clear()
        os.environ.update(before)
        os.chdir(cwd)
    assert (status, seen) == ("ok", str(tmp_path / "LR.sqlite"))
