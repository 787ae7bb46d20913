"""The sentiment baseline: the sign of the tags that became visible since the
previous decision; point in time by default, the benchmark's same-day
convention only under its own name (``sentiment-same-day``)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from fincon.data.inputs import open_events
from fincon.errors import ConfigError
from fincon.strategies.base import RunContext
from fincon.strategies.registry import make_strategy
from fincon.testing import INVESTORBENCH

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


LOOKAHEAD = "sentiment-same-day reads each news tag at its calendar day's own decision"


def test_the_same_day_run_is_labelled_a_lookahead_and_its_card_fails_point_in_time(
    events, tmp_path_factory, monkeypatch, capfd
):
    """Its card said "point in time: PASS, enforced by the engine" of a strategy that reads the corpus ahead
    by design; the point-in-time one carries no label."""
    from fincon.cli.main import main

    work = tmp_path_factory.mktemp("work")  # beside the corpus folder, not in it (its files would be read as events)
    monkeypatch.chdir(work)
    argv = ["backtest", "--ticker", "TSLA", "--start", "2022-07-01", "--end", "2022-07-15", "--no-progress",
            "--ledger", "off", "--param", f"sentiment-same-day.events={events}"]  # fmt: skip
    both = ["--strategy", "sentiment,sentiment-same-day", "--param", f"sentiment.events={events}", "--out", "both"]
    assert main([*argv, *both]) == 0
    assert f"fincon: warning: {LOOKAHEAD}" in capfd.readouterr().err
    ahead = json.loads((work / "both" / "sentiment-same-day" / "metrics.json").read_text())["data_lookahead"]
    assert ahead.startswith(LOOKAHEAD) and ahead.endswith("its point-in-time form is the strategy sentiment)")
    assert "data_lookahead" not in json.loads((work / "both" / "sentiment" / "metrics.json").read_text())
    assert json.loads((work / "both" / "run_manifest.json").read_text())["data_lookahead"] == ahead
    # a reference, never a configuration tried: the ledger's best trial of the family was sentiment-same-day
    roles = {r["strategy"]: r["role"] for r in csv.DictReader((work / "both" / "trials.csv").open())}
    assert roles == {"sentiment": "trial", "sentiment-same-day": "control"}
    assert main([*argv, "--strategy", "sentiment-same-day", "--out", "sd"]) == 0
    capfd.readouterr()
    assert main(["report", "--card", "sd", "--json"]) == 0
    row = next(r for r in json.loads(capfd.readouterr().out)["rows"] if r["point"] == "point in time")
    assert (row["verdict"], row["measured"]) == ("fail", ahead)
    # a forward journal seals only what was out before each session: it cannot give the strategy what it reads
    init = ["forward", "init", "fj", "--ticker", "TSLA", "--simulate-from", "2022-07-05", "--ledger", "off"]
    assert main([*init, "--strategy", "sentiment-same-day", "--param", f"sentiment-same-day.events={events}"]) == 2
    assert capfd.readouterr().err == (
        f"fincon: error: {ahead}: a forward journal seals only what was out before each session and cannot give "
        "it that; journal its point-in-time form\n"
    )
    assert not (work / "fj").exists()
    assert main([*init, "--strategy", "sentiment", "--param", f"sentiment.events={events}"]) == 0


@pytest.mark.slow  # an experiment on real MSFT, 15 s on 2 cores
@pytest.mark.skipif(not (INVESTORBENCH / "msft.json.gz").is_file(), reason="../shared/data/investorbench is absent")
def test_a_lookahead_baseline_is_shown_in_the_experiment_and_never_the_one_to_beat(tmp_path, monkeypatch, capsys):
    """The investorbench preset runs sentiment-same-day beside the team, and the best baseline by Sharpe is
    what the team is tested against: a lookahead could have been the baseline to beat, unmarked."""
    from fincon.cli.main import main
    from fincon.workflow.experiment_config import ExperimentConfig
    from fincon.workflow.experiment_results import collect

    monkeypatch.chdir(tmp_path)
    assert main(["data", "import", "investorbench", str(INVESTORBENCH / "msft.json.gz"), "--out", "ib"]) == 0
    assert main(["experiment", "--data", "ib", "--ticker", "MSFT", "--brain", "rules", "--baselines",
                 "buy-and-hold,sentiment,sentiment-same-day", "--repeats", "1", "--episodes", "1", "--ablations",
                 "full", "--train-start", "2020-10-01", "--train-end", "2020-10-15", "--test-start", "2020-10-16",
                 "--test-end", "2020-11-13", "--out", "ex", "--no-progress", "--ledger", "off",
                 "--bootstrap-reps", "1000"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    res = json.loads((tmp_path / "ex" / "results.json").read_text())
    assert res["baselines"]["sentiment-same-day"]["lookahead"].startswith(LOOKAHEAD)
    assert not any("lookahead" in res["baselines"][b] for b in ("buy-and-hold", "sentiment"))
    assert "\nsentiment-same-day (lookahead) " in out and res["best_baseline"] != "sentiment-same-day"
    assert out.count("sentiment-same-day (lookahead)") == 2  # the results table and the significance table
    assert res["significance"]["best_non_llm_baseline"] != "sentiment-same-day"
    # a control, not a configuration tried: the team's one run, buy-and-hold and sentiment
    assert res["significance"]["configurations"] == 3 and res["significance"]["trials"] <= 3
    # the best by Sharpe, it is still shown and not the one the team is tested against
    m = tmp_path / "ex" / "baselines" / "sentiment-same-day" / "metrics.json"
    m.write_text(json.dumps({**json.loads(m.read_text()), "sharpe": 99.0}))
    exp = ExperimentConfig.model_validate(json.loads((tmp_path / "ex" / "experiment.json").read_text())["config"])
    assert collect(exp, tmp_path / "ex")["best_baseline"] == "buy-and-hold"  # the tie of the other two: listed first


def test_the_significance_of_a_universe_holds_no_one_against_a_lookahead():
    """SPA "vs best" and the best non-LLM baseline (experiment and rolling tables) skip a baseline that
    sees more than the rest, however well it did."""
    import numpy as np

    from fincon.workflow.rolling_stats import universe_statistics

    rng = np.random.default_rng(0)
    series = {"buy-and-hold": rng.normal(0.0, 0.01, 60), "sentiment": rng.normal(0.0, 0.01, 60)}
    series["sentiment-same-day"] = np.abs(rng.normal(0.002, 0.01, 60))  # never a losing day
    _, told = universe_statistics("u", series, None, 200, 4, 0)
    rows, fair = universe_statistics("u", series, None, 200, 4, 0, frozenset({"sentiment-same-day"}))
    assert told["best_non_llm_baseline"] == "sentiment-same-day"
    assert fair["best_non_llm_baseline"] in ("buy-and-hold", "sentiment")
    # nor is it a configuration tried: DSR's trials and the PBO's matrix are the other two (as in the ledger,
    # where it is a control); it still has its own row
    from fincon.risk.significance import pbo, trials_and_variance

    assert told["trials"] == 3 and fair["trials"] == 2
    assert (fair["trials"], fair["trials_sharpe_var"]) == trials_and_variance({n: series[n] for n in list(series)[:2]})
    assert fair["pbo"] == pbo(np.column_stack([series["buy-and-hold"], series["sentiment"]]), splits=4)
    assert [r["strategy"] for r in rows] == list(series) and {r["dsr_trials"] for r in rows} == {2}


def test_a_rolling_evaluation_finds_the_runs_that_see_more_than_buy_and_hold(tmp_path):
    from fincon.workflow.rolling_stats import lookahead_runs

    dataset = "same-day dataset ib: items known only by their date are visible at that day's own decision"
    labels = {"buy-and-hold": dataset, "sentiment": dataset, "sentiment-same-day": f"{dataset}; {LOOKAHEAD}"}
    cells = ["w1", "w2"]
    for c in cells:
        for name, label in labels.items():
            (tmp_path / c / name).mkdir(parents=True)
            (tmp_path / c / name / "metrics.json").write_text(json.dumps({"data_lookahead": label}))

    def unit_dirs(cell, out):
        return {name: out / cell / name for name in labels}

    # on a same-day dataset every run is labelled; only the one that sees more than buy-and-hold counts
    assert lookahead_runs(tmp_path, cells, unit_dirs) == {"sentiment-same-day"}


def test_the_rolling_tables_mark_a_lookahead_row_as_the_experiment_table_does():
    """The rolling summary and significance tables listed sentiment-same-day as any other strategy; the
    statistics already left it out of "best", the reader could not see why."""
    import numpy as np

    from fincon.workflow.rolling_stats import significance
    from fincon.workflow.tables import rolling_summary, significance as significance_table

    rng = np.random.default_rng(1)
    names = ["buy-and-hold", "sentiment", "sentiment-same-day"]
    series = {"u": {n: rng.normal(0.0, 0.01, 40) for n in names}}
    summary = pd.DataFrame({"universe": "u", "strategy": names, "windows": 2, "wilcoxon_p": [None, 0.5, 0.5]})
    plain, _ = significance(series, summary, reps=100)
    assert "lookahead" not in plain  # summary.csv of an evaluation without one is as it was
    marked, _ = significance(series, summary, reps=100, ahead=frozenset({"sentiment-same-day"}))
    assert marked.lookahead.tolist() == [False, False, True]
    for table in (rolling_summary, significance_table):
        _, cells, _ = table(marked.to_dict("records"))
        assert [row[1] for row in cells] == ["buy-and-hold", "sentiment", "sentiment-same-day (lookahead)"]
    # as summary.csv gives it back to the HTML report
    csv_rows = pd.read_csv(io.StringIO(marked.to_csv(index=False))).to_dict("records")
    assert rolling_summary(csv_rows)[1][2][1] == "sentiment-same-day (lookahead)"
