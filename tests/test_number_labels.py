"""A number a table cannot have is printed n/a, never 0 (found in review 2026-12-02): an episode too short
for a Sharpe ratio printed "Sharpe 0.000" beside a null in episodes.jsonl, and a forward journal of one
session printed "SR/day +0.000 ... still needed: never (SR<=0)" of no return at all."""

from __future__ import annotations

from fincon.cli.train import format_episodes
from fincon.workflow.forward_score import format_score


def test_an_episode_without_a_sharpe_prints_n_a():
    rows = [{"episode": 1, "objective": 1.246, "sharpe": None, "mdd_pct": None, "alerts": 0},
            {"episode": 2, "objective": -0.5, "sharpe": 0.0, "mdd_pct": 1.5, "alerts": 1}]  # fmt: skip
    first, second = format_episodes(rows).splitlines()[1:]
    assert first.split()[:4] == ["1", "1.246", "n/a", "n/a"]
    assert second.split()[:4] == ["2", "-0.500", "0.000", "1.500"]  # a Sharpe of 0 is still 0


def _score(days: int, sr: float) -> dict:
    m = {"cr_pct": 0.0, "sharpe": None, "mdd_pct": 0.0, "sharpe_daily": sr, "psr": None, "days": days,
         "min_track_record_days": float("inf"), "sessions_still_needed": None, "dsr": None, "dsr_trials": 0}  # fmt: skip
    return {"directory": "fw", "sessions": days + 1, "first": "2023-01-13", "last": "2023-01-13", "simulated": True,
            "strategies": {"sma-cross": m}}  # fmt: skip


def test_a_journal_without_two_returns_prints_no_daily_sharpe():
    row = next(line for line in format_score(_score(0, 0.0)).splitlines() if line.startswith("sma-cross"))
    cells = row.split()  # strategy, CR, Sharpe, MDD, SR/day, PSR, MinTRL, still needed, DSR (N)
    assert "+0.000" not in row and "never" not in row and cells[4] == cells[7] == "n/a", row
    row = next(line for line in format_score(_score(5, -0.1)).splitlines() if line.startswith("sma-cross"))
    assert "-0.100" in row and "never (SR<=0)" in row, row  # returns that lost: as before
