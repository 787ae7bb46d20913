"""The sentiment baseline: the sign of the tags that became visible since the
previous decision; point in time by default, the benchmark's same-day
convention only under its own name (``sentiment-same-day``)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

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


def _days(strategy, days) -> list[dict]:
    out = []
    for d in days:
        dec = strategy.decide(SimpleNamespace(date=pd.Timestamp(d), tickers=("TSLA",)))
        out.append(dict(dec.weights) if dec else {})
    return out


def test_point_in_time_sees_a_date_only_item_the_next_day(events, tmp_path):
    s = make_strategy("sentiment", {"events": str(events)})
    s.start(RunContext(tmp_path, ("TSLA",)))
    days = ["2022-07-05", "2022-07-06", "2022-07-07", "2022-07-08"]
    assert [s.score("TSLA", pd.Timestamp(d)) for d in days[:1]] == [0]
    # 07-05: nothing visible yet; 07-06: two positives (07-05's) and one intraday negative -> long;
    # 07-07: nothing new -> keep; 07-08: two negatives of 07-07 -> short
    assert _days(s, days) == [{}, {"TSLA": 1.0}, {}, {"TSLA": -1.0}]


def test_same_day_convention_reads_each_date_on_its_own_day(events, tmp_path):
    s = make_strategy("sentiment-same-day", {"events": str(events)})
    assert s.params.timing == "same-day"
    s.start(RunContext(tmp_path, ("TSLA",)))
    # 07-05: its two positives at once (a lookahead for date-only items); 07-06: -1 -> short;
    # 07-07: -2 -> stays short; 07-08: nothing new
    assert _days(s, ["2022-07-05", "2022-07-06", "2022-07-07", "2022-07-08"]) == [{"TSLA": 1.0}, {"TSLA": -1.0}, {}, {}]


def test_flat_instead_of_short_and_a_missing_corpus_is_one_line(events, tmp_path):
    s = make_strategy("sentiment", {"events": str(events), "allow_short": False, "size": 0.5})
    s.start(RunContext(tmp_path, ("TSLA",)))
    assert _days(s, ["2022-07-06", "2022-07-08"]) == [{"TSLA": 0.5}, {"TSLA": 0.0}]
    with pytest.raises(ConfigError, match="no events"):
        make_strategy("sentiment").start(RunContext(tmp_path, ("TSLA",), data_dir=None))


def test_investorbench_preset_fills_the_protocol_and_flags_win():
    from fincon.workflow.presets import NOTES, preset_overrides

    over = preset_overrides("investorbench", {"repeats": 2, "tickers": None})
    assert over["train.start"] == "2020-07-02" and over["train.end"] == "2020-09-30"
    assert over["test.start"] == "2020-10-01" and over["test.end"] == "2021-05-06"
    assert over["repeats"] == 2 and over["team.brain"] == "rules"  # the flag wins, the preset fills the rest
    assert over["baselines"] == ["buy-and-hold", "sentiment", "sentiment-same-day"]
    assert "warm-up window only" in NOTES["investorbench"]
    assert preset_overrides(None, {"repeats": 2}) == {"repeats": 2}


@pytest.mark.parametrize("name", ["sentiment", "sentiment-same-day"])
def test_future_events_and_prices_do_not_change_decisions_up_to_t(name, tmp_path):
    """Point in time: every tag and price after day t rewritten (tags flipped,
    items deleted and inserted), the decisions up to t are unchanged, and
    the day after t does change (the test can fail)."""
    import numpy as np

    from fincon.testing import backtest, market_for, perturbed

    days = pd.bdate_range("2022-06-01", "2022-12-30")
    rng = np.random.default_rng(5)
    tags = rng.choice(["positive", "negative", "neutral"], size=len(days), p=[0.45, 0.35, 0.2])

    def write(folder: Path, cut: pd.Timestamp | None) -> Path:
        folder.mkdir()
        lines = []
        for i, (d, tag) in enumerate(zip(days, tags)):
            if cut is not None and d > cut:
                if i % 3 == 0:
                    continue  # deleted
                tag = {"positive": "negative", "negative": "positive", "neutral": "positive"}[tag]
            lines.append(
                {
                    "id": f"n{i}",
                    "ticker": "TSLA",
                    "source": "news",
                    "published_at": str(d.date()),
                    "text": f"item {i}",
                    "metadata": {"sentiment": tag},
                }
            )
        if cut is not None:
            lines += [
                {
                    "id": f"new{k}",
                    "ticker": "TSLA",
                    "source": "news",
                    "published_at": str((cut + pd.Timedelta(days=k)).date()),
                    "text": "inserted",
                    "metadata": {"sentiment": "negative"},
                }
                for k in range(1, 6)
            ]
        (folder / "TSLA.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        return folder

    base = market_for(["TSLA"], start=pd.Timestamp("2022-07-01"), end=pd.Timestamp("2022-11-30"))
    cut_n = 40
    cut = pd.Timestamp(base.dates[base.first_index + cut_n])
    a = backtest(base, make_strategy(name, {"events": str(write(tmp_path / "a", None))}))
    b = backtest(perturbed(base, cut_n), make_strategy(name, {"events": str(write(tmp_path / "b", cut))}))

    def split(res):
        before = [d for d in res.decisions if pd.Timestamp(d["date"]) <= cut]
        return before, [d for d in res.decisions if pd.Timestamp(d["date"]) > cut]

    (a_before, a_after), (b_before, b_after) = split(a), split(b)
    assert a_before and a_before == b_before
    np.testing.assert_array_equal(a.values[: cut_n + 1], b.values[: cut_n + 1])
    assert a_after != b_after
