"""The sentiment baseline: the sign of the tags that became visible since the
previous decision; point in time by default, the benchmark's same-day
convention only under its own name (``sentiment-same-day``)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from fincon.data.inputs import open_events
from fincon.errors import ConfigError
from fincon.strategies.base import RunContext
from fincon.strategies.registry import make_strategy

ITEMS = [  # (published_at, sentiment): date-only items are read as published at that day's close
    ("2022-07-05", "positive"),
    ("2022-07-05", "positive"),
    ("2022-07-06T10:00:00", "negative"),  # intraday, before the close: counts on 07-06 under both rules
    ("2022-07-07", "negative"),
    ("2022-07-07", "negative"),
    ("2022-07-07", "neutral"),
]


@pytest.fixture
def events(tmp_path: Path) -> Path:
    lines = [
        json.dumps(
            {
                "id": f"n{i}",
                "ticker": "TSLA",
                "source": "news",
                "published_at": ts,
                "text": f"item {i}",
                "metadata": {"sentiment": s},
            }
        )
        for i, (ts, s) in enumerate(ITEMS)
    ]
    (tmp_path / "TSLA.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def _started(name: str, events: Path, tmp_path: Path, **params):
    """The strategy started as the runner starts it: with the corpus it reads."""
    store = open_events(str(events), ("TSLA",))
    s = make_strategy(name, {"events": str(events), **params})
    s.start(RunContext(tmp_path, ("TSLA",), events=store))
    s.store = store
    return s


def _view(strategy, day: str) -> SimpleNamespace:
    """A market view's part the baseline reads: the day, the tickers, the day's events."""
    return SimpleNamespace(date=pd.Timestamp(day), tickers=("TSLA",), events=strategy.store.view_at(day))


def _days(strategy, days) -> list[dict]:
    out = []
    for d in days:
        dec = strategy.decide(_view(strategy, d))
        out.append(dict(dec.weights) if dec else {})
    return out


def test_point_in_time_sees_a_date_only_item_the_next_day(events, tmp_path):
    s = _started("sentiment", events, tmp_path)
    days = ["2022-07-05", "2022-07-06", "2022-07-07", "2022-07-08"]
    assert [s.score("TSLA", _view(s, d)) for d in days[:1]] == [0]
    # 07-05: nothing visible yet; 07-06: two positives (07-05's) and one intraday negative -> long;
    # 07-07: nothing new -> keep; 07-08: two negatives of 07-07 -> short
    assert _days(s, days) == [{}, {"TSLA": 1.0}, {}, {"TSLA": -1.0}]


def test_same_day_convention_reads_each_date_on_its_own_day(events, tmp_path):
    s = _started("sentiment-same-day", events, tmp_path)
    assert s.params.timing == "same-day"
    # 07-05: its two positives at once (a lookahead for date-only items); 07-06: -1 -> short;
    # 07-07: -2 -> stays short; 07-08: nothing new
    assert _days(s, ["2022-07-05", "2022-07-06", "2022-07-07", "2022-07-08"]) == [{"TSLA": 1.0}, {"TSLA": -1.0}, {}, {}]


def test_flat_instead_of_short_and_a_missing_corpus_is_one_line(events, tmp_path):
    s = _started("sentiment", events, tmp_path, allow_short=False, size=0.5)
    assert _days(s, ["2022-07-06", "2022-07-08"]) == [{"TSLA": 0.5}, {"TSLA": 0.0}]
    with pytest.raises(ConfigError, match="no events"):
        make_strategy("sentiment").start(RunContext(tmp_path, ("TSLA",)))
    # a corpus without sentiment tags (the bundled sample) would hold cash every day: refused
    with pytest.raises(ConfigError, match="no sentiment-tagged news for TSLA"):
        make_strategy("sentiment").start(RunContext(tmp_path, ("TSLA",), events=open_events("sample", ("TSLA",))))


def test_investorbench_preset_fills_the_protocol_and_flags_win():
    from fincon.workflow.presets import NOTES, preset_overrides

    over = preset_overrides("investorbench", {"repeats": 2, "tickers": None})
    assert over["train.start"] == "2020-07-02" and over["train.end"] == "2020-09-30"
    assert over["test.start"] == "2020-10-01" and over["test.end"] == "2021-05-06"
    assert over["repeats"] == 2 and over["team.brain"] == "rules"  # the flag wins, the preset fills the rest
    assert over["baselines"] == ["buy-and-hold", "sentiment", "sentiment-same-day"]
    assert "warm-up window only" in NOTES["investorbench"]
    assert preset_overrides(None, {"repeats": 2}) == {"repeats": 2}
