"""Shared fixtures. Helpers (doubles, markets, corpora) live in the test kit,
``fincon.testing``; what is here is what pytest must own: fixtures, above
all the session-scoped ones whose set-up is expensive.

Under pytest-xdist every worker is its own session, so a session fixture is
built once per worker that needs it (``tmp_path_factory`` gives each worker
its own base directory: nothing here writes to a shared fixed path).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# Under two or more xdist workers each worker gets one core's worth of threads:
# a live llama.cpp model (FINCON_LLM_THREADS, docs/configuration.md), torch
# (Whisper, MiniLM) and BLAS would otherwise each start one thread per core and
# wait on the other worker's (llama.cpp ~20x slower so). Set before anything
# imports torch; a user's own setting wins.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    for _var in ("FINCON_LLM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

# The trial ledger (fincon.workflow.trials): the suite's runs go to a ledger of its own, one per
# worker, never to the user's ~/.local/share/fincon/trials.sqlite, and removed when the worker exits
if "FINCON_LEDGER" not in os.environ:
    import atexit
    import shutil
    import tempfile

    _ledger_dir = tempfile.mkdtemp(prefix="fincon-test-ledger-")
    atexit.register(shutil.rmtree, _ledger_dir, ignore_errors=True)
    os.environ["FINCON_LEDGER"] = str(Path(_ledger_dir) / "trials.sqlite")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fincon.data.sources import make_source  # noqa: E402
from fincon.testing import END, SMALL_EXPERIMENT, SMALL_TEAM_RUN, START, TINY_EXPERIMENT, backtest, market_for  # noqa: F401, E402  (for `from conftest import`)

#: the tiers of pyproject.toml that `make test-fast` leaves out
HEAVY_TIERS = ("slow", "live", "notebook", "browser")


def pytest_addoption(parser):
    parser.addoption(
        "--cpu-report",
        metavar="DIR",
        help="write each test's CPU-seconds (its process, and the child processes it reaped) to DIR/<worker>.csv",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """``--cpu-report DIR``: the budget of CONTRIBUTING.md is CPU-seconds, and
    ``--durations`` shows wall time, where a test waiting on a subprocess, a
    server or another xdist worker looks as dear as one computing."""
    out = item.config.getoption("--cpu-report")
    if not out:
        yield
        return
    import csv
    import resource

    def cpu() -> tuple[float, float]:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime

    before = cpu()
    yield
    after = cpu()
    path = Path(out) / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with path.open("a", newline="") as fh:
        w = csv.writer(fh)
        if new:
            w.writerow(["test", "cpu_s", "children_cpu_s"])
        w.writerow([item.nodeid, f"{after[0] - before[0]:.3f}", f"{after[1] - before[1]:.3f}"])


def pytest_collection_modifyitems(items):
    """Files holding a heavy-tier test run first (files keep their order, tests
    theirs). `make test` hands whole files to xdist workers in this order, so
    the long ones (Ray, training, the live models) start at once and the many
    short ones fill the end, instead of one worker finishing a long file alone."""
    heavy = {item.path for item in items if any(item.get_closest_marker(t) for t in HEAVY_TIERS)}
    items.sort(key=lambda item: item.path not in heavy)  # stable: within each group, collection order


@pytest.fixture(scope="session")
def raw_tsla() -> pd.DataFrame:
    return make_source("sample").load("TSLA", START, END)


@pytest.fixture(scope="session")
def report_run(tmp_path_factory) -> Path:
    """The team run (``SMALL_TEAM_RUN``) with its report.html, made once per
    session for test_report.py and test_report_browser.py."""
    from fincon.cli.main import main

    out = tmp_path_factory.getbasetemp() / "report-run" / "fincon-tsla"
    if not out.exists():
        assert main([*SMALL_TEAM_RUN, "--out", str(out), "--report"]) == 0
    assert (out / "report.html").is_file(), "fincon backtest --report wrote no report.html"
    return out


def shared_tmp(tmp_path_factory) -> Path:
    """A directory every xdist worker of this test run shares (the parent of
    their base temps; the base temp itself without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _shared_experiment(tmp_path_factory, name: str, args: list[str]) -> tuple[Path, str]:
    """Experiment ``args`` run once per test run, by whichever xdist worker
    asks first (the others wait on a file lock), and its printed output."""
    import contextlib
    import io

    from filelock import FileLock

    from fincon.cli.main import main

    root = shared_tmp(tmp_path_factory)
    out, printed = root / name / "tsla", root / name / "printed.txt"
    with FileLock(str(root / f"{name}.lock")):
        if not printed.is_file():
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                code = main(args + ["--out", str(out)])
            assert code == 0, buf.getvalue()
            printed.write_text(buf.getvalue())
    return out, printed.read_text()


@pytest.fixture(scope="session")
def small_experiment(tmp_path_factory) -> tuple[Path, str]:
    """``SMALL_EXPERIMENT`` (13 units) and its printed table, shared by the
    whole test run (test_experiment.py reads it). Read it, never write into
    it: a test that resumes or damages an experiment copies it first
    (``fincon.testing.copy_experiment``)."""
    return _shared_experiment(tmp_path_factory, "small-experiment", SMALL_EXPERIMENT)


@pytest.fixture(scope="session")
def tiny_experiment(tmp_path_factory) -> tuple[Path, str]:
    """``TINY_EXPERIMENT`` (5 units) run in one process, with ``--json``:
    what the worker-process and Ray executors are compared with. Read only."""
    return _shared_experiment(tmp_path_factory, "tiny-experiment", TINY_EXPERIMENT + ["--json"])


RECORDINGS = Path(__file__).resolve().parent / "recordings"


class RecordedTranscripts:
    """A private copy of tests/recordings/transcripts as a transcript cache
    (``--param fincon.transcript_cache=<path>``): the team reads the recorded
    Whisper transcripts instead of running Whisper. ``assert_all_replayed()``
    fails if a run transcribed anything (the recording is stale)."""

    def __init__(self, path: Path):
        self.path = path
        shutil.copytree(RECORDINGS / "transcripts", path / "transcripts")
        self._recorded = self._names()

    def _names(self) -> set[str]:
        return {p.name for p in (self.path / "transcripts").iterdir()}

    def assert_all_replayed(self) -> None:
        new = sorted(self._names() - self._recorded)
        assert not new, (
            f"the run transcribed {len(new)} call(s) live ({', '.join(new)}): the recording is stale; "
            "re-record with `python tests/recordings/record.py`"
        )


@pytest.fixture(scope="module")
def recorded_transcripts(tmp_path_factory) -> RecordedTranscripts:
    return RecordedTranscripts(tmp_path_factory.mktemp("transcripts"))
