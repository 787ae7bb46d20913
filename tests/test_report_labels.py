"""What the statistics tables say of their numbers: which returns the daily Sharpe ratio is of, and how many
daily returns a test window's statistics are over."""

from __future__ import annotations

from pathlib import Path

from fincon.report.load import Experiment, ReportData, Source
from fincon.report.studies import section_experiment
from fincon.workflow.tables import significance

ROW = {"strategy": "buy-and-hold", "days": 41, "sharpe_daily": 0.013, "sharpe_ci_lo": -0.2, "sharpe_ci_hi": 0.25,
       "psr": 0.53, "min_track_record_days": 16000.0, "dsr": 0.4, "dsr_trials": 3}  # fmt: skip


def test_the_daily_sharpe_column_says_it_is_of_simple_returns():
    """Found in review: a run with CR -1.7 % and Sharpe -0.145 (log returns, less the risk-free rate) read
    "daily SR +0.013" and a finite MinTRL beside it, unlabelled: the statistics are of simple returns, per
    day. The numbers stay; the header says which returns they are."""
    head, body, _ = significance([ROW])
    assert head[3] == "daily SR (simple returns) [95% CI]"
    assert body[0][3] == "+0.013 [-0.200, +0.250]"  # the figure as it was


def test_an_experiments_statistics_are_said_to_be_over_its_daily_returns():
    """Found in review: the page headed them "over the test window's 41 days" of runs of 42 days: 41 is the
    count of daily returns (the text report said so already)."""
    res = {"significance": {"days": 41, "summary": [ROW]}}
    data = ReportData([Source(Path("e"), "experiment", experiment=Experiment("e", Path("e"), res))], [])
    html = section_experiment(data)
    assert "<h4>Statistics over the test window&#x27;s 41 daily returns</h4>" in html
    assert "daily SR (simple returns) [95% CI]" in html
