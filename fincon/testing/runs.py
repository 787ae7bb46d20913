"""Command lines of the small runs several test files share, and a reader
of what a run wrote. Shared here so one test file never imports another
(importing a test file collects its tests twice and couples the two)."""

from __future__ import annotations

import json
from pathlib import Path

#: ``fincon experiment`` on TSLA, rules brain, one-month train and test windows,
#: 2 repeats x 2 episodes: every ablation and baseline in well under a minute.
SMALL_EXPERIMENT = [
    "experiment",
    "--ticker",
    "TSLA",
    "--brain",
    "rules",
    "--events",
    "sample",
    "--param",
    "fincon.transcripts=text",
    "--train-start",
    "2022-04-01",
    "--train-end",
    "2022-04-29",
    "--test-start",
    "2022-05-02",
    "--test-end",
    "2022-05-31",
    "--repeats",
    "2",
    "--episodes",
    "2",
    "--no-progress",
]

#: ``fincon backtest`` of the team (rules brain) on TSLA over two weeks that hold
#: a 10-Q and an earnings call (read as text: no Whisper).
SMALL_TEAM_RUN = [
    "backtest",
    "--ticker",
    "TSLA",
    "--strategy",
    "fincon",
    "--brain",
    "rules",
    "--events",
    "sample",
    "--start",
    "2022-10-05",
    "--end",
    "2022-10-20",
    "--param",
    "fincon.transcripts=text",
    "--no-progress",
]


def decisions_of(run: Path) -> list[dict]:
    """The days of a run directory's ``decisions.jsonl``, parsed."""
    return [json.loads(line) for line in (Path(run) / "decisions.jsonl").read_text().splitlines()]
