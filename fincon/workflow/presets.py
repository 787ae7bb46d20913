"""Named experiment protocols (``fincon experiment --preset NAME``).

A preset fills the experiment's windows, repeats, brain and baselines from a
public benchmark's published protocol; any flag given on the command line
wins over it. Presets only choose *which* windows and rows; every team
parameter is still learned on the preset's training (warm-up) window alone.
"""

from __future__ import annotations

from typing import Any

#: InvestorBench (single-asset stocks): warm-up 2020-07-02..2020-09-30, test
#: 2020-10-01..2021-05-06. Rows: the team's three ablations (full, no-cvar =
#: without risk control, no-beliefs = without belief training), buy-and-hold,
#: the sentiment baseline under the point-in-time rule, and the same baseline
#: under the benchmark's same-day convention (a lookahead, shown for its worth)
PRESETS: dict[str, dict[str, Any]] = {
    "investorbench": {
        "train.start": "2020-07-02",
        "train.end": "2020-09-30",
        "test.start": "2020-10-01",
        "test.end": "2021-05-06",
        "repeats": 5,
        "team.brain": "rules",
        # a daily news corpus changes tone every day: the manager keeps a position until the
        # evidence against it passes 0.1 more than the neutral band (fixed before any run, not tuned)
        "team.hold_band": 0.1,
        "ablations": ["full", "no-cvar", "no-beliefs"],
        "baselines": ["buy-and-hold", "sentiment", "sentiment-same-day"],
    },
}

NOTES: dict[str, str] = {
    "investorbench": (
        "InvestorBench protocol: beliefs trained on the warm-up window only (2020-07-02..2020-09-30); every team "
        "parameter is its default, fixed a priori (hold_band 0.1) or learned there, none chosen on the test window. Items visible under the "
        "point-in-time rule (a date-only item counts from the next trading day); sentiment-same-day uses the "
        "benchmark's same-day convention, a lookahead shown for what it is worth."
    ),
}


def preset_overrides(name: str | None, given: dict[str, Any]) -> dict[str, Any]:
    """``given`` (the command line's overrides) over the preset's values."""
    if not name:
        return given
    out = dict(PRESETS[name])
    out.update({k: v for k, v in given.items() if v is not None})
    return out
