"""Shared fixtures. Helpers (doubles, markets, corpora) live in the test kit,
``fincon.testing``; what is here is what pytest must own: fixtures, above
all the session-scoped ones whose set-up is expensive.

Under pytest-xdist every worker is its own session, so a session fixture is
built once per worker that needs it (``tmp_path_factory`` gives each worker
its own base directory: nothing here writes to a shared fixed path).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from fincon.data.sources import make_source
from fincon.testing import END, SMALL_TEAM_RUN, START, backtest, market_for  # noqa: F401  (for `from conftest import`)

#: the tiers of pyproject.toml that `make test-fast` leaves out
HEAVY_TIERS = ("slow", "live", "notebook", "browser")


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
