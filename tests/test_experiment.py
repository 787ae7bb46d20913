"""``fincon experiment`` (issue 9, item 7): repeats x ablations, baselines,
median runs, the Wilcoxon test, the views, resume and the YAML config."""

from __future__ import annotations

import contextlib
import html
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from fincon.cli.main import main
from fincon.errors import ConfigError
from fincon.testing import SMALL_EXPERIMENT, copy_experiment, setting
from fincon.workflow.experiment import load_experiment
from fincon.workflow.experiment_config import ABLATIONS, BASELINES
from fincon.workflow.experiment_results import median_repeat
from fincon.workflow.tables import identical_flags

# short windows keep the 2 x 3 trainings (2 episodes) and 6 test runs fast
ARGS = SMALL_EXPERIMENT


def log_returns(run: Path) -> pd.Series:
    eq = pd.read_csv(run / "equity.csv", parse_dates=["date"]).set_index("date")["value"]
    return np.log(eq / eq.shift(1)).dropna()


def metrics(run: Path) -> dict:
    return json.loads((run / "metrics.json").read_text())


@pytest.fixture(scope="module")
def experiment(small_experiment):
    """The small experiment of the session (conftest.py), read only."""
    out, table = small_experiment
    return out, 0, table


@pytest.mark.slow
def test_end_to_end_table_and_files(experiment):
    out, code, text = experiment
    assert code == 0, text
    for a in ABLATIONS:
        assert f"fincon {a} (median: r" in text
    for b in BASELINES:
        assert b in text
    assert "p vs " in text and "Wilcoxon" in text
    assert json.loads((out / "experiment.json").read_text())["status"] == "complete"
    for name in ("results.json", "equity.png", "beliefs.png", "beliefs.md"):
        assert (out / name).stat().st_size > 0, name
    for a in ABLATIONS:
        for r in (1, 2):
            assert json.loads((out / "train" / f"{a}-r{r}" / "train.json").read_text())["status"] == "complete"
            assert metrics(out / "test" / f"{a}-r{r}")["status"] == "complete"
    for b in BASELINES:
        assert metrics(out / "baselines" / b)["status"] == "complete"
    # the ablations reach the runs: no CVaR alert in train and test, untrained beliefs
    for stage in ("train/no-cvar-r1/config.yaml", "test/no-cvar-r1/config.yaml"):
        assert yaml.safe_load((out / stage).read_text())["strategy_params"]["fincon"]["cvar"] is False
    assert json.loads((out / "train/no-beliefs-r1/beliefs.json").read_text())["version"] == 0
    assert json.loads((out / "train/full-r1/beliefs.json").read_text())["version"] >= 1
    test_cfg = yaml.safe_load((out / "test/full-r2/config.yaml").read_text())
    assert test_cfg["strategy_params"]["fincon"]["beliefs"] == str((out / "train/full-r2").absolute())
    # repeats differ by their exploration seed
    ep2 = [json.loads((out / f"train/full-r{r}/episodes.jsonl").read_text().splitlines()[1]) for r in (1, 2)]
    assert ep2[0]["weights_in_force"] != ep2[1]["weights_in_force"]
    assert "| episode | objective (CR %) | tau |" in (out / "beliefs.md").read_text()


@pytest.mark.slow
def test_median_and_wilcoxon_recomputed(experiment):
    from scipy.stats import wilcoxon

    out, _, _ = experiment
    res = json.loads((out / "results.json").read_text())
    sharpe = {b: metrics(out / "baselines" / b)["sharpe"] for b in BASELINES}
    sharpe = {b: s for b, s in sharpe.items() if s is not None}  # a flat curve has no Sharpe
    best = max(sharpe, key=sharpe.get)
    assert res["best_baseline"] == best
    assert f"{best} *" in experiment[2]
    for a in ABLATIONS:
        crs = {r: metrics(out / "test" / f"{a}-r{r}")["cr_pct"] for r in (1, 2)}
        med = res["median"][a]
        assert med["cr_pct"] == sorted(crs.values())[0]  # two repeats: the lower middle run
        assert med["repeat"] == median_repeat(crs)
        assert med["run_dir"] == f"test/{a}-r{med['repeat']}"
        a_ret, b_ret = log_returns(out / med["run_dir"]), log_returns(out / "baselines" / best)
        assert list(a_ret.index) == list(b_ret.index)
        expected = wilcoxon(a_ret.to_numpy(), b_ret.to_numpy())
        assert med["wilcoxon"]["against"] == best
        assert med["wilcoxon"]["p_value"] == pytest.approx(float(expected.pvalue), rel=1e-12)
        assert med["wilcoxon"]["statistic"] == pytest.approx(float(expected.statistic))
        assert f"{med['wilcoxon']['p_value']:.4f}" in experiment[2]


@pytest.mark.slow
def test_the_statistics_of_the_experiment_recomputed(experiment):
    """summary.csv: one row per team variant (its median run) and baseline; the
    PSR and the Sharpe recomputed by hand from the run's equity, the DSR deflated
    by the configurations run (ledger off in the tests' own runs aside), Holm and
    BH across the variants as statsmodels computes them."""
    from statsmodels.stats.multitest import multipletests

    out, _, text = experiment
    res = json.loads((out / "results.json").read_text())
    sig = res["significance"]
    table = pd.read_csv(out / "summary.csv")
    assert list(table["strategy"]) == [f"fincon-{a}" for a in ABLATIONS] + list(BASELINES)
    # DSR's N and V over one set (issue 42 item 6): the distinct daily return series among every repeat
    # of every variant and the baselines, counted by hand (a one-ticker equal weight is buy-and-hold)
    runs = [out / "test" / f"{a}-r{r}" for a in ABLATIONS for r in (1, 2)] + [out / "baselines" / b for b in BASELINES]
    every = [pd.read_csv(r / "equity.csv")["value"].to_numpy() for r in runs]
    every = [v[1:] / v[:-1] - 1.0 for v in every]
    distinct = []
    for r in every:
        if not any(np.array_equal(np.round(r, 12), np.round(d, 12)) for d in distinct):
            distinct.append(r)
    assert sig["configurations"] == len(ABLATIONS) * 2 + len(BASELINES)
    assert sig["trials"] == len(distinct) < sig["configurations"]
    srs = [d.mean() / d.std(ddof=1) if d.std(ddof=1) > 0 else 0.0 for d in distinct]  # a flat book: 0
    assert sig["trials_sharpe_var"] == pytest.approx(np.var(srs, ddof=1))
    assert (table["dsr_trials"] == sig["trials"]).all() and sig["pbo"]["splits"] == table["pbo_splits"].iloc[0]
    for a in ABLATIONS:
        row = table[table.strategy == f"fincon-{a}"].iloc[0]
        eq = pd.read_csv(out / res["median"][a]["run_dir"] / "equity.csv")["value"].to_numpy()
        r = eq[1:] / eq[:-1] - 1.0
        sr = r.mean() / r.std(ddof=1)
        assert row["sharpe_daily"] == pytest.approx(sr, rel=1e-4)
        skew = ((r - r.mean()) ** 3).mean() / r.std(ddof=0) ** 3
        kurt = ((r - r.mean()) ** 4).mean() / r.std(ddof=0) ** 4
        from scipy.stats import norm

        want = norm.cdf(sr * np.sqrt(len(r) - 1) / np.sqrt(1 - skew * sr + (kurt - 1) / 4 * sr**2))
        assert row["psr"] == pytest.approx(want, rel=1e-4)
        if len(r) >= 10:
            assert row["sharpe_ci_lo"] <= row["sharpe_daily"] <= row["sharpe_ci_hi"]
        else:  # too few days for a bootstrap interval: an empty cell, never a made-up one
            assert np.isnan(row["sharpe_ci_lo"]) and np.isnan(row["sharpe_ci_hi"])
    p = [res["median"][a]["wilcoxon"]["p_value"] for a in ABLATIONS]
    holm, bh = multipletests(p, method="holm")[1], multipletests(p, method="fdr_bh")[1]
    rows = table.set_index("strategy")
    for a, h, b in zip(ABLATIONS, holm, bh):
        assert rows.loc[f"fincon-{a}", "wilcoxon_p_holm"] == pytest.approx(h, rel=1e-5)
        assert rows.loc[f"fincon-{a}", "wilcoxon_p_bh"] == pytest.approx(b, rel=1e-5)
    assert (
        "significance over the test window's" in text
        and "configurations run here, its variance over the same series" in text
    )
    # and in the HTML report: the same rows, the trial count beside the DSR
    from fincon.report.html import render
    from fincon.report.load import load_report_data

    page = render(load_report_data([out]))
    assert "Statistics over the test window" in page and f"({sig['trials']})" in page


@pytest.mark.slow
def test_runs_that_traded_identically_are_named_under_the_table(experiment):
    """Found on InvestorBench's MSFT with the rules brain (3 repeats x 2 episodes, per-share costs): full
    and no-beliefs printed the same 2.970 % in every column and each variant's three repeats one CR,
    unsaid. results.json groups the test runs that traded identically (checked here against the equity
    files by hand) and the table names each group of rows it cannot tell apart, in text and on the page."""
    from fincon.report.html import render
    from fincon.report.load import load_report_data
    from fincon.workflow.tables import identical_flags

    out, _, text = experiment
    res = json.loads((out / "results.json").read_text())
    runs = {f"fincon-{a}-r{r}": out / "test" / f"{a}-r{r}" for a in ABLATIONS for r in (1, 2)}
    runs.update({b: out / "baselines" / b for b in BASELINES})
    rets = {n: pd.read_csv(p / "equity.csv")["value"].to_numpy() for n, p in runs.items()}
    rets = {n: np.round(v[1:] / v[:-1] - 1.0, 12) for n, v in rets.items()}
    groups: list[list[str]] = []
    for n, r in rets.items():
        g = next((g for g in groups if np.array_equal(rets[g[0]], r)), None)
        groups.append([n]) if g is None else g.append(n)
    assert res["significance"]["identical"] == [g for g in groups if len(g) > 1] != []
    flags = identical_flags(res)
    assert flags and all(f"FLAG: {f}" in text for f in flags)
    page = render(load_report_data([out]))
    assert all(html.escape(f"FLAG: {f}") in page for f in flags)


def test_the_flags_of_identical_runs_say_what_changed_no_decision():
    res = {
        "repeats": 3,
        "median": {a: {"protocol": "fincon", "ablation": a, "repeat": 2} for a in ABLATIONS},
        "runs": {f"full-r{r}": {"train_objectives": [2.43, o]} for r, o in ((1, 3.74), (2, 1.66), (3, 0.75))},
        "baselines": {"buy-and-hold": {}, "sma-cross": {}},
        "significance": {"identical": [
            [*(f"fincon-full-r{r}" for r in (1, 2, 3)), *(f"fincon-no-beliefs-r{r}" for r in (1, 2, 3))],
            ["fincon-no-cvar-r1", "fincon-no-cvar-r3"],
        ]},
    }  # fmt: skip
    assert identical_flags(res) == [
        "fincon full: its 3 repeats traded identically on the test window, though their trainings ended apart "
        "(last episode's CR % 0.75..3.74): 'CR % over repeats' measures no spread",
        "fincon no-beliefs: its 3 repeats traded identically on the test window: 'CR % over repeats' measures "
        "no spread",
        "fincon full and fincon no-beliefs (the rows above): the same daily returns on the test window; the "
        "beliefs its training learned changed no decision; the table's differences between them measure nothing",
    ]  # no-cvar's median repeat (2) traded apart from the other two: no flag of its own
    res["significance"]["identical"] = [["fincon-full-r2", "buy-and-hold"]]
    assert identical_flags(res) == [
        "fincon full and buy-and-hold (the rows above): the same daily returns on the test window; the table's "
        "differences between them measure nothing"
    ]
    res["significance"]["identical"] = [["buy-and-hold", "sma-cross", "fincon-no-cvar-r2"]]
    assert identical_flags(res)[0].startswith("buy-and-hold, sma-cross and fincon no-cvar (the rows above)")
    assert identical_flags({**res, "significance": {}}) == []


@pytest.mark.slow
def test_an_experiment_with_costs_says_what_they_took(experiment, tmp_path, capsys):
    """Found on InvestorBench's MSFT (per-share commission, 5 bp, a borrow fee): the rules team turned its
    book over 24.5 times and the table said nothing of what that cost, where a backtest's terminal and a
    journal's score say it. A `trading costs $` column (fees, slippage, borrow: each run's metrics.json)
    when a cost is set; an experiment without costs prints the table it did."""
    from fincon.testing import TINY_EXPERIMENT, setting

    args = setting(TINY_EXPERIMENT, "--ablations", "full", "--baselines", "buy-and-hold,sma-cross", "--ledger", "off")
    dear = ["--commission", "0.001", "--slippage-model", "bps", "--slippage", "5", "--borrow", "0.003"]
    assert main([*args, *dear, "--out", str(tmp_path / "dear")]) == 0
    text = capsys.readouterr().out
    res = json.loads((tmp_path / "dear" / "results.json").read_text())
    paid = ("commission_paid", "slippage_paid", "borrow_paid")

    def took(run: Path) -> float:
        costs = metrics(run)["costs"]
        return sum(costs[k] for k in paid)

    assert res["runs"]["full-r1"]["costs_paid"] == pytest.approx(took(tmp_path / "dear" / "test" / "full-r1"))
    assert res["median"]["full"]["costs_paid"] > 0
    head, *rows = [x for x in text.splitlines() if x.startswith(("run ", "fincon full", "buy-and-hold", "sma-cross"))]
    assert "trading costs $" in head
    for row in rows:
        name = row.split("  ")[0].split(" (")[0].removesuffix(" *")
        run = tmp_path / "dear" / ("test/full-r1" if name == "fincon full" else f"baselines/{name}")
        assert f" {took(run):,.2f} " in f"{row} ", row
    assert "trading costs $" not in experiment[2]  # the small experiment has no costs
    assert "costs_paid" not in json.loads((experiment[0] / "results.json").read_text())["runs"]["full-r1"]


@pytest.mark.slow
def test_rerun_resumes_with_nothing_to_run(experiment, capsys, tmp_path):
    out = copy_experiment(experiment[0], tmp_path / "tsla")  # the session's experiment is shared, read only
    before = (out / "results.json").read_bytes()
    capsys.readouterr()
    assert main(ARGS + ["--out", str(out), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["ran"] == []
    assert (out / "results.json").read_bytes() == before
    # the bootstrap count is no part of the experiment's identity: another one recomputes the
    # statistics of the finished experiment and runs no unit
    assert main(setting(ARGS, "--bootstrap-reps", "200") + ["--out", str(out), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["ran"] == [] and obj["significance"]["bootstrap_reps"] == 200
    assert obj["median"] == json.loads(before)["median"]
    assert obj["significance"]["summary"] != json.loads(before)["significance"]["summary"]  # intervals of 200 draws
    # a unit lost (or never finished) is the only one run again; the results are the same
    shutil.rmtree(out / "test" / "no-cvar-r2")
    # a new process, as a user reruns it (chromadb caches a client per path for the
    # life of a process, so the same run path cannot be rebuilt in-process)
    proc = subprocess.run(
        [sys.executable, "-m", "fincon.cli.main", *ARGS, "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ran"] == ["test/no-cvar-r2"]
    assert (out / "results.json").read_bytes() == before
    # another config into the same directory is refused
    assert main(setting(ARGS, "--repeats", "3") + ["--out", str(out)]) == 2
    assert "another config" in capsys.readouterr().err


def test_median_repeat():
    assert median_repeat({1: 3.0, 2: -1.0, 3: 7.0, 4: 0.5, 5: 2.0}) == 5
    assert median_repeat({1: 3.0, 2: -1.0, 3: 7.0, 4: 0.5}) == 4  # even: the lower middle run
    assert median_repeat({1: 1.0, 2: 1.0, 3: 1.0}) == 2


@pytest.mark.slow
def test_yaml_config(tmp_path, capsys):
    exp = load_experiment(Path(__file__).parents[1] / "examples" / "experiment.yaml", {"repeats": 3})
    assert exp.repeats == 3 and exp.brain == "rules" and str(exp.test.start) == "2022-10-05"
    bad = tmp_path / "bad.yaml"
    bad.write_text("tickers: [TSLA]\nrepeats: 2\nepisods: 3\n")
    assert main(["experiment", "--config", str(bad), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fincon: error:") and "'episods'" in err
    assert not (tmp_path / "runs").exists()
    for tree, word in [
        ({"ablations": ["full", "no-risk"]}, "ablations"),
        ({"baselines": ["fincon"]}, "fincon"),
        ({"team": {"cvar": False}}, "team.cvar"),
        ({"team": {"brian": "rules"}}, "brian"),
        ({"train": {"start": "2022-01-03", "end": "2022-12-30"}}, "before the test window"),
        ({"temperature": 0}, "temperature"),
        ({"strategy_params": {"markowitz": {"lookbak": 60}}}, "lookbak"),
        ({"strategy_params": {"fincon": {"brain": "rules"}}}, "team:"),
    ]:
        with pytest.raises(ConfigError, match=word):
            load_experiment(None, tree)


@pytest.mark.slow
def test_protocols_compared_on_one_table(tmp_path):
    """--protocols: every protocol trains and tests with the same team, data and
    windows; one table with each median run, its usage columns and measures."""
    out = tmp_path / "cmp"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(
            [
                "experiment",
                "--bootstrap-reps",
                "1000",
                "--ticker",
                "TSLA",
                "--brain",
                "rules",
                "--protocols",
                "fincon,scm,debate",
                "--ablations",
                "full",
                "--repeats",
                "1",
                "--episodes",
                "1",
                "--train-start",
                "2022-10-03",
                "--train-end",
                "2022-10-14",
                "--test-start",
                "2022-10-17",
                "--test-end",
                "2022-11-08",
                "--baselines",
                "buy-and-hold",
                "--param",
                "fincon.transcripts=text",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
    text = buf.getvalue()
    assert code == 0, text
    res = json.loads((out / "results.json").read_text())
    assert sorted(res["median"]) == ["debate-full", "full", "scm-full"]
    for v, proto in [("full", "fincon"), ("scm-full", "scm"), ("debate-full", "debate")]:
        m = res["median"][v]
        assert m["protocol"] == proto and m["calls_per_day"] == 0.0  # rules brain: no model call
        cfg = yaml.safe_load((out / m["run_dir"] / "config.yaml").read_text())
        assert cfg["strategy_params"]["fincon"]["protocol"] == proto
        assert metrics(out / m["run_dir"])["cr_pct"] == m["cr_pct"]
        row = next(line for line in text.splitlines() if line.startswith(f"{proto} full (median: r1)"))
        assert f"{m['cr_pct']:.3f}" in row
    assert res["median"]["scm-full"]["protocol_measures"]["scm_citation_share"] == 1.0
    assert res["median"]["debate-full"]["protocol_measures"]["debate_days"] >= 1  # a call (2022-10-20) in the window
    assert "protocol measures (median runs):" in text
    # turnover, and how often each protocol decided otherwise than the plain team (issue 21, item 6)
    from fincon.workflow.experiment_results import differs_share

    full = out / res["median"]["full"]["run_dir"]
    for v in ("scm-full", "debate-full"):
        m = res["median"][v]
        assert m["turnover"] == metrics(out / m["run_dir"])["turnover"]
        assert (
            m["differs_from_fincon"] == differs_share(out / m["run_dir"], full) and 0 <= m["differs_from_fincon"] <= 1
        )
    assert differs_share(full, full) == 0.0
    assert "differs %" in text


@pytest.mark.slow
def test_statistics_on_a_short_window_say_they_mean_nothing(experiment):
    """Found by hand: an experiment on 3 sessions printed PSR 0.80 and MinTRL 5 from 2 daily returns
    without a word. Under 20 returns the table says they are too few, in text and in the report."""
    from fincon.report.parts import significance_table
    from fincon.workflow.tables import MIN_STAT_DAYS, significance_flags

    out, _, text = experiment
    rows = json.loads((out / "results.json").read_text())["significance"]["summary"]
    days = min(r["days"] for r in rows)
    assert days < MIN_STAT_DAYS
    assert f"FLAG: {days} daily returns: too few for these statistics to mean anything" in text
    assert "too few for these statistics" in significance_table(rows, "the test window")
    assert significance_flags([{**r, "days": MIN_STAT_DAYS} for r in rows]) == []


def test_an_experiment_takes_the_broker_flags_a_backtest_does_and_each_unit_runs_with_them():
    """The card graded an experiment "LLM cost as cost: model spend not charged (--charge-llm)" and its
    frictions "(--slippage-model bps --slippage 5)", flags `fincon experiment` refused ("unrecognized
    arguments"): an experiment's costs could be set only in its YAML's broker section. It takes the
    backtest's broker flags (one declaration, fincon.cli.broker_flags), and every unit runs with them."""
    from fincon.cli.experiment import build_experiment
    from fincon.cli.main import build_parser
    from fincon.workflow.experiment_units import baseline_config, train_config

    argv = ["experiment", "--ticker", "TSLA", "--brain", "rules", "--charge-llm", "--commission-model", "per-share",
            "--slippage-model", "bps", "--slippage", "5", "--participation", "0.025", "--fill", "next-open"]  # fmt: skip
    exp = build_experiment(build_parser("experiment").parse_args(argv))
    for cfg in (baseline_config(exp), train_config(exp, "full", 1)):
        b = cfg.broker
        assert (b.charge_llm, b.commission.model, b.slippage.model, b.participation, b.fill) == (
            True, "per-share", "bps", 0.025, "next_open")  # fmt: skip
        assert b.slippage.bps == 5 and b.commission.minimum == 1.0


def test_runs_of_unequal_length_are_paired_by_date():
    """Found in review 2026-12-02: the statistics cut every run to the shortest's length by its last days,
    so a run that stopped after 3 of 5 days was paired with the others' days 3 to 5. Paired by date: each
    run on the days every run traded."""
    from fincon.workflow.experiment_stats import on_common_days

    days = pd.bdate_range("2022-10-03", periods=5)
    full = pd.Series([0.01, 0.02, 0.03, 0.04, 0.05], index=days)
    stopped = pd.Series([-0.01, -0.02, -0.03], index=days[:3])
    got = on_common_days({"buy-and-hold": full, "fincon-full-r1": stopped})
    assert got["buy-and-hold"].tolist() == [0.01, 0.02, 0.03] and got["fincon-full-r1"].tolist() == [
        -0.01,
        -0.02,
        -0.03,
    ]
