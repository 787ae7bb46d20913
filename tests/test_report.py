"""fincon report: one self-contained, reproducible HTML page per run,
comparison, training or experiment (the browser test is test_report_browser.py).

The run behind the page is the rules brain on TSLA, 2022-10-05..2022-10-20
(earnings calls read as text, so no Whisper), made once per session with
``fincon backtest --report`` (the ``report_run`` fixture of conftest.py).
"""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fincon.agents.records import format_day
from fincon.cli.main import main
from fincon.llm.ledger import USAGE_COLUMNS
from fincon.testing import decisions_of as days_of


def sections(page: str) -> list[str]:
    return re.findall(r'<section id="([a-z]+)">', page)


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_backtest_report_holds_every_part(report_run, capsys):
    page = (report_run / "report.html").read_text(encoding="utf-8")
    assert sections(page) == [
        "card",
        "metrics",
        "curves",
        "decisions",
        "llm",
        "performance",
    ]  # no training, no experiment
    assert '"rangebreaks":[{"bounds":["sat","mon"]}]' in page.replace(" ", "")  # a stock's: no weekend line
    # every key metrics.json holds, beside the benchmark's from summary.json
    metrics = json.loads((report_run / "metrics.json").read_text())
    for key in metrics:
        if key != "strategy":
            assert f"<code>{key}</code>" in page
    assert "buy-and-hold (benchmark)" in page
    assert "FLAG: 11 daily returns: too few for Sharpe, Sortino, volatility, VaR and CVaR to mean anything" in page
    assert f"{json.loads((report_run / 'summary.json').read_text())['benchmark']['final_value']:,.0f}" in page
    # the curves: team, its alert markers, the benchmark as the run saved it (benchmark_equity.csv)
    days = days_of(report_run)
    alerts = [d["date"] for d in days if d["record"]["risk"]["alert"]]
    assert alerts, "the window should hold CVaR alerts"
    assert 'id="equity-chart"' in page and f"fincon: CVaR alert ({len(alerts)})" in page
    saved = list(csv.DictReader(open(report_run / "benchmark_equity.csv")))
    bench = json.loads((report_run / "summary.json").read_text())["benchmark"]
    team = list(csv.DictReader(open(report_run / "equity.csv")))
    assert [r["date"] for r in saved] == [r["date"] for r in team]  # the same sessions as the team's curve
    assert round(float(saved[-1]["value"]), 2) == round(bench["final_value"], 2)
    assert html.escape("matching the benchmark's recorded final value") not in page  # drawn, not recomputed
    # the timeline: one button and one hidden article per decision day, holding fincon explain's text
    for d in days:
        assert f'data-day="{d["date"]}" aria-pressed="false"' in page
        assert html.escape(format_day(d, "close")) in page  # the run fills at the close (its default)
    assert page.count("<article ") == len(days)
    assert page.count('<span class="flag">CVaR alert</span>') == len(alerts)
    # LLM usage of a rules-brain run: no ledger, the per-agent reuse counts from the records
    reused = sum(d["record"]["calls"]["reused"] for d in days)
    assert "no llm_usage.csv: no model was asked" in page
    assert re.search(rf"<td>total</td>(<td>[0-9,]+</td>){{2}}<td>{reused}</td>", page)
    # self-contained: plotly.js inline, no external script, stylesheet or font
    assert "plotly.js v" in page
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page)
    assert "@import" not in page


@pytest.mark.slow  # 1.5-4.6 s on 2 cores: in make test, not in make test-fast (under a minute)
def test_the_benchmark_curve_is_the_one_the_run_saved(report_run, tmp_path, monkeypatch, capsys):
    """A run saves its benchmark's curve and the report draws it without running the engine; a run
    directory from before benchmark_equity.csv shows the benchmark's metrics, no curve, and says why."""
    import fincon.engine.backtest as engine

    monkeypatch.setattr(engine, "run_backtest", lambda *a, **k: pytest.fail("the report ran the engine"))
    assert main(["report", str(report_run), "--out", str(tmp_path / "now.html")]) == 0
    old = tmp_path / "old"
    shutil.copytree(report_run, old)
    (old / "benchmark_equity.csv").unlink()
    assert main(["report", str(old), "--out", str(tmp_path / "old.html")]) == 0
    page = (tmp_path / "old.html").read_text(encoding="utf-8")
    assert html.escape("curve not drawn: the run saved no curve of it (written before benchmark_equity.csv") in page
    assert "bench-buy-and-hold" in (tmp_path / "now.html").read_text(encoding="utf-8")
    assert "bench-buy-and-hold" not in page
    capsys.readouterr()


def test_report_is_reproducible(report_run, tmp_path, capsys):
    """Same run directory, same bytes: from `fincon report`, from a copy
    elsewhere, and as `backtest --report` wrote it."""
    copy = tmp_path / "elsewhere" / report_run.name
    shutil.copytree(report_run, copy)
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    assert main(["report", str(report_run), "--out", str(a)]) == 0
    assert f"report: {a} (" in capsys.readouterr().out
    assert main(["report", str(copy), "--out", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes() == (report_run / "report.html").read_bytes()
    assert str(report_run) not in a.read_text() and str(tmp_path) not in a.read_text()


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_report_leaves_matplotlib_style_alone(report_run):
    """Importing quantstats restyles matplotlib globally; a report must not,
    or every equity.png drawn later in the same process would change. (A
    fresh interpreter: in this one quantstats is already imported.)"""
    code = (
        "import matplotlib; before = dict(matplotlib.rcParams); "
        "from fincon.report import build_report; build_report([sys.argv[1]]); "
        "assert dict(matplotlib.rcParams) == before"
    )
    subprocess.run([sys.executable, "-c", "import sys; " + code, str(report_run)], check=True)


def _write_usage(run: Path) -> None:
    """An llm_usage.csv / llm_audit.jsonl as the ledger writes them."""
    with open(run / "llm_usage.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=USAGE_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerow(
            {
                "day": "2022-10-05",
                "agent": "news/TSLA",
                "calls": 2,
                "prompt_tokens": 900,
                "completion_tokens": 100,
                "total_tokens": 1000,
                "cost_usd": "0.001500",
                "reasks": 1,
                "fallbacks": 0,
                "failures": 0,
            }
        )
        w.writerow(
            {
                "day": "2022-10-06",
                "agent": "manager",
                "calls": 3,
                "prompt_tokens": 2000,
                "completion_tokens": 300,
                "total_tokens": 2300,
                "cost_usd": "0.002000",
                "reasks": 1,
                "fallbacks": 1,
                "failures": 1,
            }
        )
    fallback = {"agent": "manager", "day": "2022-10-06", "event": "fallback",
                "reason": "invalid or badly cited answer after one re-ask; rules brain used"}  # fmt: skip
    reuse = {"agent": "news/TSLA", "day": "2022-10-07", "event": "reuse", "digest": "ab"}
    (run / "llm_audit.jsonl").write_text("".join(json.dumps(e) + "\n" for e in (fallback, reuse, reuse)))
    (run / "llm_runtime.csv").write_text(  # a replay: every call from the cache
        "day,agent,live_calls,cache_hits,latency_s,spent_usd,queued_s,model_s\n"
        "2022-10-06,manager,0,3,0.0,0.0,0.0,0.0\n2022-10-06,news/TSLA,0,2,0.0,0.0,0.0,0.0\n"
    )


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_comparison_of_runs_with_llm_usage(report_run, tmp_path, capsys):
    """Several RUNs side by side: a comparison directory (whose buy-and-hold
    run is the benchmark) and a team run with an LLM ledger."""
    team = tmp_path / "team"
    shutil.copytree(report_run, team)
    (team / "report.html").unlink()
    _write_usage(team)
    comp = tmp_path / "baselines"
    assert (
        main(
            [
                "backtest",
                "--ticker",
                "TSLA",
                "--strategy",
                "sma-cross,buy-and-hold",
                "--start",
                "2022-10-05",
                "--end",
                "2022-10-20",
                "--no-progress",
                "--out",
                str(comp),
            ]
        )
        == 0
    )
    capsys.readouterr()
    out = tmp_path / "compare.html"
    assert main(["report", str(team), str(comp), "--out", str(out)]) == 0
    page = out.read_text()
    head = re.search(r"<thead><tr><th>metric</th>(.*?)</tr>", page).group(1)
    assert re.findall(r"<th>([^<]+)</th>", head) == ["fincon", "sma-cross", "buy-and-hold"]  # as asked
    # the comparison's buy-and-hold run is the benchmark: drawn once, not recomputed
    assert "recomputed" not in page
    assert page.count('"name":"buy-and-hold"') == 2  # equity and drawdown
    # LLM usage from the ledger, with the audit trail
    assert "llm_audit.jsonl: 3 event(s) (2 reuse, 1 fallback)" in page  # 254 reuses read "(re-asks, ...)"
    assert "0 asked live, 5 answered from the call cache" in page  # a replay's calls, all the cache's
    assert re.search(
        r"<td>manager</td><td>3</td><td>2,000</td><td>300</td><td>0.0020</td><td>1</td><td>1</td>"
        r"<td>1</td>",
        page,
    )
    assert re.search(r"<td>total</td><td>5</td><td>2,900</td><td>400</td><td>0.0035</td>", page)
    assert "3,300 tokens, $0.0035" in page
    assert sections(page) == ["card", "metrics", "curves", "decisions", "llm", "performance"]


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_training_beliefs_tau_objective(tmp_path, capsys):
    """A `fincon train` directory: every episode's curve, the last one's
    timeline, beliefs, tau and objective per episode."""
    train = tmp_path / "train"
    assert (
        main(
            [
                "train",
                "--ticker",
                "TSLA",
                "--brain",
                "rules",
                "--episodes",
                "2",
                "--start",
                "2022-04-01",
                "--end",
                "2022-04-08",
                "--param",
                "fincon.transcripts=text",
                "--no-progress",
                "--out",
                str(train),
            ]
        )
        == 0
    )
    capsys.readouterr()
    out = tmp_path / "train.html"
    assert main(["report", str(train), "--out", str(out)]) == 0
    page = out.read_text()
    assert "training" in sections(page)
    rows = [json.loads(line) for line in (train / "episodes.jsonl").read_text().splitlines()]
    assert 'id="training-1"' in page and "tau (same action share)" in page
    for r in rows:
        assert f"<td>{r['episode']}</td><td>{r['objective']:.3f}</td>" in page
    assert f"<td>{rows[1]['tau']:.3f}</td>" in page
    beliefs = json.loads((train / "beliefs.json").read_text())
    assert f"learned beliefs (beliefs.json, version {beliefs['version']})" in page
    for name, p in beliefs["perspectives"].items():
        assert f"<td>{name}</td><td>{p['weight']:.3f}</td>" in page
    # the curves of both episodes; the timeline of the last only
    assert '"name":"ep-01"' in page and '"name":"ep-02"' in page
    assert page.count('<div class="timeline"') == 1 and "<h3>ep-02</h3>" in page


def test_training_files_in_a_run_dir_and_absent(report_run, tmp_path, capsys):
    """The reader is defensive: beliefs.json / episodes.jsonl in a run
    directory add the training section; a run without them has none."""
    run = tmp_path / "run"
    shutil.copytree(report_run, run)
    (run / "beliefs.json").write_text(
        json.dumps(
            {
                "format": 1,
                "version": 2,
                "perspectives": {
                    "news": {"text": "Trust sustained news tone.", "weight": 0.4},
                    "risk": {"text": "", "weight": 0.5},
                },
                "reflections": [{"day": "2022-10-06", "text": "a loss; be careful"}],
            }
        )
    )
    (run / "episodes.jsonl").write_text(
        json.dumps({"episode": 1, "objective": 1.5})
        + "\n"
        + json.dumps({"episode": 2, "objective": 2.5, "tau": 0.75})
        + "\n"
    )
    out = tmp_path / "r.html"
    assert main(["report", str(run), "--out", str(out)]) == 0
    page = out.read_text()
    assert "training" in sections(page)
    assert "Trust sustained news tone." in page and "<td>0.750</td>" in page and "1 reflection(s)" in page
    (run / "episodes.jsonl").unlink()
    assert main(["report", str(run), "--out", str(out)]) == 0
    assert "Trust sustained news tone." in out.read_text()  # beliefs alone still shown
    (run / "beliefs.json").unlink()
    assert main(["report", str(run), "--out", str(out)]) == 0
    assert "training" not in sections(out.read_text())


def test_experiment_directory(report_run, tmp_path, capsys):
    """An experiment: its median runs, baselines and the Wilcoxon table (the
    layout of fincon/workflow/experiment.py, with one repeat)."""
    exp = tmp_path / "exp"
    shutil.copytree(report_run, exp / "test" / "full-r1")
    (exp / "experiment.json").write_text(json.dumps({"config": {}, "status": "complete"}))
    (exp / "results.json").write_text(
        json.dumps(
            {
                "tickers": ["TSLA"],
                "train": {"start": "2022-01-03", "end": "2022-10-04"},
                "test": {"start": "2022-10-05", "end": "2022-10-20"},
                "repeats": 1,
                "episodes": 2,
                "brain": "rules",
                "best_baseline": "buy-and-hold",
                "returns": "daily log returns; Wilcoxon signed-rank, two-sided",
                "median": {
                    "full": {
                        "run_dir": "test/full-r1",
                        "repeat": 1,
                        "cr_pct": 6.4456,
                        "sharpe": 2.73,
                        "mdd_pct": 7.57,
                        "cr_pct_min": 6.4456,
                        "cr_pct_max": 6.4456,
                        "wilcoxon": {"against": "buy-and-hold", "p_value": 0.0421, "n": 11},
                    }
                },
                "baselines": {"buy-and-hold": {"cr_pct": -14.99, "sharpe": -4.94, "mdd_pct": 14.87}},
                "runs": {
                    "full-r1": {"ablation": "full", "repeat": 1, "cr_pct": 6.4456, "train_objectives": [1.0, 2.0]}
                },
            }
        )
    )
    out = tmp_path / "exp.html"
    assert main(["report", str(exp), "--out", str(out)]) == 0
    page = out.read_text()
    assert "experiment" in sections(page)
    assert "fincon full (median r1)" in page and "<td>0.0421</td>" in page and "buy-and-hold *" in page


@pytest.mark.parametrize("case", ["missing", "a_file", "not_a_run", "bad_json", "out_is_dir", "out_parent_missing"])
def test_report_bad_input(case, report_run, tmp_path, capsys):
    """One line `fincon: error: ...`, status 2, nothing written."""
    (tmp_path / "plain").mkdir()
    (tmp_path / "a_file").write_text("x\n")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "metrics.json").write_text("{not json")
    out = tmp_path / "r.html"
    args = {
        "missing": [str(tmp_path / "nope")],
        "a_file": [str(tmp_path / "a_file")],
        "not_a_run": [str(tmp_path / "plain")],
        "bad_json": [str(bad)],
        "out_is_dir": [str(report_run), "--out", str(tmp_path / "plain")],
        "out_parent_missing": [str(report_run), "--out", str(tmp_path / "no" / "r.html")],
    }[case]
    if "--out" not in args:
        args += ["--out", str(out)]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main(["report", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fincon: error: ") and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_performance_is_annualised_with_the_runs_calendar(tmp_path, capsys):
    """A coin trades every day: its run's metrics are annualised with 365 days,
    and so is the report's quantstats table, whose Sharpe (zero risk-free
    rate) is then the metrics table's ``sharpe_empyrical`` as its note says;
    with 252 it was that figure / 1.20 for the run and for its benchmark."""
    import numpy as np
    import pandas as pd

    days = pd.date_range("2023-01-01", periods=40, freq="D")
    close = 20000.0 * np.cumprod(np.where(np.arange(40) % 3, 1.012, 0.984))
    bars = pd.DataFrame({"Date": days.strftime("%Y-%m-%d"), "Open": close, "High": close * 1.01,
                         "Low": close * 0.99, "Close": close, "Adj Close": close, "Volume": 1000})  # fmt: skip
    (tmp_path / "prices").mkdir()
    bars.to_csv(tmp_path / "prices" / "COIN.csv", index=False)
    run = tmp_path / "run"
    argv = ["backtest", "--ticker", "COIN", "--data", tmp_path / "prices", "--strategy", "sma-cross"]
    argv += ["--start", "2023-01-05", "--end", "2023-02-09", "--out", run, "--no-progress", "--report"]
    assert main([str(a) for a in argv]) == 0
    capsys.readouterr()
    metrics = json.loads((run / "metrics.json").read_text())
    bench = json.loads((run / "summary.json").read_text())["benchmark"]
    assert metrics["days_per_year"] == 365
    page = (run / "report.html").read_text(encoding="utf-8")
    perf = page[page.index('<section id="performance">') :]
    row = re.search(r"<td>Sharpe</td><td>([-0-9.]+)</td><td>([-0-9.]+)</td>", perf)
    assert row, perf[:2000]
    assert [float(x) for x in row.groups()] == [
        round(metrics["sharpe_empyrical"], 3),
        round(bench["sharpe_empyrical"], 3),
    ]
    assert "annualised with each curve's days a year (365 here" in perf
    # a coin's weekend closes are drawn: the chart's weekend break (a stock's) hid them
    assert '"rangebreaks":[{"bounds":["sat","mon"]}]' not in page.replace(" ", "")
    assert main(["report", str(run), "--out", str(tmp_path / "again.html")]) == 0
    capsys.readouterr()


def test_each_run_is_compared_with_the_benchmark_of_its_own_costs(tmp_path, capsys):
    """Benchmarks were kept by window alone: the first run given on a window supplied the benchmark
    of every other (TSLA, 1 % commission and next-open fills beside a run without costs: its
    benchmark's CR read 1.055 or 1.480 by the order the runs were given). One per window and settings,
    each run against its own, named apart."""
    from fincon.report.load import load_report_data

    window = ["--ticker", "TSLA", "--start", "2022-10-05", "--end", "2022-11-30", "--no-progress"]
    free, costly = tmp_path / "free", tmp_path / "costly"
    assert main(["backtest", "--strategy", "sma-cross", *window, "--out", str(free)]) == 0
    assert main(["backtest", "--strategy", "sma-cross", "--commission", "0.01", "--fill", "next-open", *window,
                 "--out", str(costly)]) == 0  # fmt: skip
    capsys.readouterr()
    own = {p: json.loads((p / "summary.json").read_text())["benchmark"]["cr_pct"] for p in (free, costly)}
    assert own[free] != own[costly]
    for n, order in enumerate(([free, costly], [costly, free])):
        page = tmp_path / f"r{n}.html"
        assert main(["report", *map(str, order), "--out", str(page)]) == 0
        text = page.read_text(encoding="utf-8")
        assert all(f"<td>{own[p]:.3f}</td>" in text for p in order), order  # both benchmarks' CR shown
        data = load_report_data(order)
        bench = {b.terms: b for b in data.benchmarks}
        assert {r.path: bench[r.terms].metrics["cr_pct"] for r in data.runs} == own
        assert len({b.label for b in data.benchmarks}) == 2
    capsys.readouterr()


def test_a_damaged_run_is_named_not_shown_as_complete(report_run, tmp_path, capsys):
    """Found in review: an equity.csv cut to 100 of 171 closes was drawn and scored beside metrics.json's
    figures of the whole run (the page contradicting itself, exit 0), a comparison whose strategy's folder
    was gone showed its top-level metrics as complete, and `fincon plot` drew any folder holding an
    equity.csv, and a run that stopped early beside whole windows, without a word."""
    cut = tmp_path / "cut"
    shutil.copytree(report_run, cut)
    lines = (cut / "equity.csv").read_text().splitlines(keepends=True)
    (cut / "equity.csv").write_text("".join(lines[:6]))
    for cmd in (
        ["report", str(cut), "--out", str(tmp_path / "r.html")],
        ["plot", str(cut), "--out", str(tmp_path / "p.png")],
    ):
        assert main(cmd) == 2
        err = capsys.readouterr().err
        assert "equity.csv: 5 closes" in err and "the run directory is damaged; run it again" in err, err

    both = tmp_path / "both"
    assert main(["backtest", "--ticker", "TSLA", "--strategy", "sma-cross,buy-and-hold", "--start", "2022-10-05",
                 "--end", "2022-11-30", "--no-progress", "--out", str(both)]) == 0  # fmt: skip
    shutil.rmtree(both / "sma-cross")
    capsys.readouterr()
    assert main(["report", str(both), "--out", str(tmp_path / "b.html")]) == 2
    assert "names sma-cross, complete, but" in capsys.readouterr().err

    bare = tmp_path / "bare"
    shutil.copytree(report_run, bare)
    (bare / "metrics.json").unlink()
    assert main(["plot", str(bare), "--out", str(tmp_path / "q.png")]) == 2
    assert "holds equity.csv but no metrics.json" in capsys.readouterr().err
    stopped = tmp_path / "stopped"
    shutil.copytree(report_run, stopped)
    m = json.loads((stopped / "metrics.json").read_text())
    (stopped / "metrics.json").write_text(json.dumps({**m, "status": "stopped_early"}))
    assert main(["plot", str(report_run), str(stopped), "--out", str(tmp_path / "s.png")]) == 0
    assert f"note: did not cover its window: {stopped} (stopped_early, to" in capsys.readouterr().out


def test_runs_of_other_windows_are_said_to_be(tmp_path, capsys):
    """Found in review: a 171-day run beside a 4-day one (or TSLA beside a three-stock book) was drawn
    and tabled with nothing but folder names: each run is labelled with its window when they differ."""
    args = ["backtest", "--ticker", "TSLA", "--strategy", "sma-cross", "--no-progress"]
    assert main([*args, "--start", "2022-10-05", "--end", "2022-11-30", "--out", str(tmp_path / "long")]) == 0
    assert main([*args, "--start", "2022-11-01", "--end", "2022-11-07", "--out", str(tmp_path / "short")]) == 0
    capsys.readouterr()
    assert main(["plot", str(tmp_path / "long"), str(tmp_path / "short"), "--out", str(tmp_path / "p.png")]) == 0
    assert "note: the runs trade other tickers or windows" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "long"), str(tmp_path / "short"), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert (
        "long/sma-cross (TSLA 2022-10-05..2022-11-30)" in page
        and "short/sma-cross (TSLA 2022-11-01..2022-11-07)" in page
    )
    capsys.readouterr()


def test_a_run_missing_its_decisions_or_usage_or_cut_short_is_refused_not_shown_complete(report_run, tmp_path, capsys):
    """Found in review: a team run without decisions.jsonl was shown "complete" without its decisions
    (the card then scored calibration "not measured", kinder than the run's FAIL), one cut to 30 of its
    60 lines showed 30 days beside "days 61", and the demo without llm_usage.csv said "no model was
    asked" beside 166 calls. Each is refused in one line naming the file."""

    def damaged(name, harm):
        run = tmp_path / name
        shutil.copytree(report_run, run)
        harm(run / "fincon" if (run / "fincon").is_dir() else run)
        capsys.readouterr()
        assert main(["report", str(run), "--out", str(tmp_path / f"{name}.html")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "the run directory is damaged; run it again" in err, err
        return err

    assert "decisions.jsonl: missing, where" in damaged("gone", lambda r: (r / "decisions.jsonl").unlink())

    def cut(run):
        lines = (run / "decisions.jsonl").read_text().splitlines(keepends=True)
        (run / "decisions.jsonl").write_text("".join(lines[: len(lines) // 2]))

    assert "decisions where metrics.json counts" in damaged("cut", cut)

    def asked(run):  # a run whose decisions record model calls, its usage file gone
        rows = [json.loads(x) for x in (run / "decisions.jsonl").read_text().splitlines()]
        rows[0].setdefault("record", {})["calls"] = {"made": 3}
        (run / "decisions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (run / "llm_usage.csv").unlink(missing_ok=True)

    assert "llm_usage.csv: missing, where its decisions record model calls" in damaged("usage", asked)


@pytest.mark.slow
def test_runs_that_differ_in_settings_are_labelled_and_a_damaged_comparison_is_not_plotted(tmp_path, capsys):
    """Found in review: two runs of one curve with risk-free rates 0 and 5 % were laid side by side with
    Sharpe 1.95 and 1.78 and the page never said why; plot overlaid runs of other costs, fills and cash
    without a word, drew a comparison with a strategy's folder gone (exit 0, "1 run") and the staging
    folder of a killed run. Settings that differ are named in each column and legend; the others refused."""
    base = ["backtest", "--ticker", "TSLA", "--strategy", "sma-cross", "--start", "2022-10-05", "--end",
            "2022-11-30", "--ledger", "off", "--no-progress"]  # fmt: skip
    assert main([*base, "--out", str(tmp_path / "a")]) == 0
    assert main([*base, "--risk-free", "0.05", "--out", str(tmp_path / "b")]) == 0
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "sma-cross (risk_free 0.0)" in page and "sma-cross (risk_free 0.05)" in page
    capsys.readouterr()
    assert main(["plot", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "p.png")]) == 0
    out = capsys.readouterr().out
    assert (
        f"note: the runs differ in their settings: {tmp_path / 'a'}: risk_free 0.0; {tmp_path / 'b'}: risk_free 0.05"
        in out
    )
    # a comparison whose strategy's folder is gone, and a killed run's staging folder: refused
    both = tmp_path / "both"
    assert main([*base[:4], "sma-cross,buy-and-hold", *base[5:], "--out", str(both)]) == 0
    shutil.rmtree(both / "sma-cross")
    assert main(["plot", str(both), "--out", str(tmp_path / "q.png")]) == 2
    assert "names sma-cross, complete, but" in capsys.readouterr().err
    staging = tmp_path / ".k.partial-123@host"
    shutil.copytree(tmp_path / "a", staging)
    assert main(["plot", str(staging), "--out", str(tmp_path / "s.png")]) == 2
    assert "is the staging folder of a run that was stopped or still runs" in capsys.readouterr().err
    assert main(["report", str(staging), "--out", str(tmp_path / "s.html")]) == 2
    assert "is the staging folder of a run that was stopped or still runs" in capsys.readouterr().err


def test_settings_some_runs_lack_are_no_difference_and_a_plots_legend_stays_short(tmp_path, capsys):
    """Found in review: plot named every key one run's config lacks ("commission.maximum -,
    commission.per_share -, ...") in every legend label, about 200 characters each, and the legend pushed
    the axes into a third of the image. A key some runs lack is no difference; the settings wrap."""
    from fincon.report.load import settings_apart

    a = {"broker": {"commission": {"model": "percent", "rate": 0.001}, "cash": 1000}}
    b = {"broker": {"commission": {"model": "per-share", "per_share": 0.005, "maximum": 1.0}, "cash": 1000}}
    assert settings_apart({"a": a, "b": b}) == {"a": 'commission.model "percent"', "b": 'commission.model "per-share"'}
