"""Shared fixtures. Helpers (doubles, markets, corpora) live in the test kit,
``fincon.testing``; what is here is what pytest must own: fixtures, above
all the session-scoped ones whose set-up is expensive.

Under pytest-xdist every worker is its own session, so a session fixture is
built once per worker that needs it (``tmp_path_factory`` gives each worker
its own base directory: nothing here writes to a shared fixed path).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fincon.data.sources import make_source
from fincon.testing import END, START, SMALL_TEAM_RUN, backtest, market_for  # noqa: F401  (for `from conftest import`)


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
