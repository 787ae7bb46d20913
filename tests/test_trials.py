"""The trial ledger (issue 32 item 1): every scored strategy is a row, a rerun
of the same config is the same trial, and `fincon ledger` counts them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fincon.cli.main import main
from fincon.report import text
from fincon.workflow import trials
from fincon.workflow.tables import MIN_STAT_DAYS

RUN = ["backtest", "--ticker", "TSLA", "--start", "2022-10-05", "--end", "2022-11-30", "--no-progress"]


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_every_run_is_counted_once_and_a_new_config_is_a_new_trial(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    ledger = tmp_path / "trials.sqlite"
    argv = [*RUN, "--strategy", "sma-cross", "--ledger", str(ledger)]
    assert main([*argv, "--out", "a"]) == 0
    assert main([*argv, "--out", "b"]) == 0  # the same config again: the same trial
    rows = trials.read(ledger)
    assert [(r["strategy"], r["study"]) for r in rows] == [("sma-cross", "TSLA 2022-10-05..2022-11-30")]
    first = rows[0]
    assert first["n_days"] == len(pd.read_csv(tmp_path / "a" / "equity.csv")) - 1
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert first["cr_pct"] == metrics["cr_pct"] and first["sharpe"] == metrics["sharpe"]
    assert first["model_knowledge"] == "no-model"
    # the run's own copy, without the time: byte-identical between the two runs
    assert (tmp_path / "a" / "trials.csv").read_bytes() == (tmp_path / "b" / "trials.csv").read_bytes()
    assert "first_seen" not in (tmp_path / "a" / "trials.csv").read_text()
    assert main([*argv, "--param", "sma-cross.fast=5", "--out", "c"]) == 0  # another configuration
    assert main([*RUN, "--strategy", "buy-and-hold", "--ledger", str(ledger), "--out", "d"]) == 0
    rows = trials.read(ledger)
    assert len(rows) == 3 and len({r["config_hash"] for r in rows}) == 3
    # both crossovers stayed flat over the window (no signal): one return series, so one trial
    assert [r["cr_pct"] for r in rows if r["strategy"] == "sma-cross"] == [0.0, 0.0]
    assert trials.family(ledger, ["TSLA"], "2022-10-05", "2022-11-30").trials == 2
    capsys.readouterr()
    assert main(["ledger", "--ledger", str(ledger), "--json"]) == 0
    (study,) = json.loads(capsys.readouterr().out)["families"]
    best = max((r for r in rows if r["sharpe"] is not None), key=lambda r: r["sharpe"])
    assert study["trials"] == 2 and study["configurations"] == 3 and study["best_sharpe"] == best["sharpe"]
    assert study["best_strategy"] == "buy-and-hold" and study["tried_before_best"] == 1


def test_ledger_off_keeps_none_and_a_directory_is_refused(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FINCON_LEDGER", str(tmp_path / "env.sqlite"))
    assert main([*RUN, "--ledger", "off", "--out", "a"]) == 0
    assert not (tmp_path / "env.sqlite").exists() and (tmp_path / "a" / "trials.csv").is_file()
    assert main([*RUN, "--out", "b"]) == 0  # the environment's ledger
    assert len(trials.read(tmp_path / "env.sqlite")) == 1
    capfd.readouterr()
    assert main([*RUN, "--ledger", str(tmp_path), "--out", "c"]) == 2
    assert "is a directory" in capfd.readouterr().err
    # found in review: a ledger that cannot be written failed only once the run was committed (exit 2
    # beside a complete run that no ledger counted); it is opened before any work now
    (tmp_path / "afile").write_text("")
    assert main([*RUN, "--ledger", str(tmp_path / "afile" / "l.sqlite"), "--out", "d"]) == 2
    assert "trial ledger" in capfd.readouterr().err and not (tmp_path / "d").exists()


def test_a_stop_as_a_run_is_committed_leaves_it_counted(tmp_path, monkeypatch):
    """Found in review: a SIGTERM between the commit and the ledger's row left a complete run that no
    ledger counted ("partial output removed", exit 143). The stop waits for both."""
    import os
    import signal

    from fincon.engine import rundir

    commit = rundir.RunDir.commit

    def stopped(self):
        os.kill(os.getpid(), signal.SIGTERM)
        return commit(self)

    monkeypatch.setattr(rundir.RunDir, "commit", stopped)
    argv = [*RUN, "--strategy", "sma-cross", "--ledger", str(tmp_path / "l.sqlite"), "--out", str(tmp_path / "x")]
    assert main(argv) == 143
    assert json.loads((tmp_path / "x" / "metrics.json").read_text())["status"] == "complete"
    assert len(trials.read(tmp_path / "l.sqlite")) == 1


def _row(strategy, start, end, digest, sharpe, role="trial", tickers="TSLA", config=None):
    return {"first_seen": f"2026-01-01T00:00:{len(digest):02d}", "study": f"{tickers} {start}..{end}",
            "config_hash": config or f"{strategy}-{digest}", "strategy": strategy, "repeat": 1, "model": None,
            "model_knowledge": "no-model", "beliefs_version": None, "tickers": tickers, "start": start, "end": end,
            "n_days": 100, "returns_digest": digest, "cr_pct": 1.0, "sharpe": sharpe * 252**0.5,
            "sharpe_daily": sharpe, "role": role}  # fmt: skip


def test_overlapping_windows_are_one_family_and_identical_series_one_trial():
    """Issue 42 items 1, 5, 6: a window moved by a day joins its family; a
    repeat that traded identically is not a second trial; a placebo control
    is neither a trial nor a family's best; the variance is over the same
    distinct series the count is."""
    rows = [
        _row("sma-cross", "2022-05-02", "2022-09-30", "a", 0.01),
        _row("sma-cross", "2022-05-03", "2022-09-30", "b", 0.02),  # the window moved by a day
        _row("fincon", "2022-05-02", "2022-09-30", "c", 0.05, config="r1"),
        _row("fincon", "2022-05-02", "2022-09-30", "c", 0.05, config="r2"),  # a repeat, the same series
        _row("fincon", "2022-05-02", "2022-09-30", "d", 0.30, role="control"),  # a placebo twin
        _row("sma-cross", "2022-09-30", "2022-12-30", "e", 0.04),  # touches the family's last day: joins it
        _row("sma-cross", "2023-01-03", "2023-03-30", "f", 0.00),  # apart
        _row("sma-cross", "2022-05-02", "2022-09-30", "g", 0.00, tickers="MSFT"),  # other tickers
    ]
    fams = {f.name: f for f in trials.families(rows)}
    assert sorted(fams) == ["MSFT 2022-05-02..2022-09-30", "TSLA 2022-05-02..2022-12-30", "TSLA 2023-01-03..2023-03-30"]
    fam = fams["TSLA 2022-05-02..2022-12-30"]
    assert fam.trials == 4 and len(fam.trial_rows) == 5 and len(fam.controls) == 1
    s = [0.01, 0.02, 0.05, 0.04]
    mean = sum(s) / 4
    assert fam.sharpe_var() == pytest.approx(sum((x - mean) ** 2 for x in s) / 3, rel=1e-12)
    (summ,) = [x for x in trials.summary(rows) if x["family"] == fam.name]
    assert summ["best_strategy"] == "fincon" and summ["best_sharpe"] == pytest.approx(0.05 * 252**0.5)
    assert summ["controls"] == 1 and summ["windows"] == 3 and summ["tried_before_best"] == 2
    # the family of a window that overlaps it, asked for before it was run
    assert trials.family_of(rows, ["TSLA"], "2022-12-01", "2023-01-10").trials == 5  # joins both TSLA families


def test_a_family_names_the_trials_on_other_tickers_over_the_days_it_shares(tmp_path, capsys):
    """Found by hand: sma-cross run on four of the sample's tickers over one window; `fincon ledger` read
    TSLA's Sharpe of 1.05 as its family's best, "tried before it: 0", the pick among four tickers nowhere.
    Each family names the other ticker sets tried over days it shares, with their distinct trials; its own
    count (DSR's N) is unchanged: other tickers trade other series."""
    rows = [
        _row("sma-cross", "2022-10-05", "2023-03-30", "a", 0.07),
        _row("sma-cross", "2022-10-05", "2023-03-30", "b", 0.01, tickers="MSFT"),
        _row("fincon", "2022-10-05", "2023-03-30", "c", 0.02, tickers="MSFT"),
        _row("fincon", "2022-10-05", "2023-03-30", "c", 0.02, tickers="MSFT", config="r2"),  # the same series
        _row("sma-cross", "2023-01-03", "2023-06-30", "d", 0.00, tickers="AMZN"),  # overlaps the window's end
        _row("sma-cross", "2023-04-03", "2023-06-30", "e", 0.03, tickers="NFLX"),  # after it: another question
        _row("fincon", "2022-10-05", "2023-03-30", "f", 0.09, tickers="AMZN", role="control"),  # never a try
    ]
    fam = trials.family_of(rows, ["TSLA"], "2022-10-05", "2023-03-30")
    assert fam.trials == 1 and fam.beside == {"AMZN": 1, "MSFT": 2}
    assert trials.said_beside(fam.beside) == "AMZN 1 trial, MSFT 2 trials"
    summ = {x["family"]: x for x in trials.summary(rows)}
    assert (
        summ["TSLA 2022-10-05..2023-03-30"]["other_tickers"],
        summ["TSLA 2022-10-05..2023-03-30"]["other_trials"],
    ) == (2, 3)
    assert (
        summ["NFLX 2023-04-03..2023-06-30"]["other_tickers"],
        summ["NFLX 2023-04-03..2023-06-30"]["other_trials"],
    ) == (1, 1)
    ledger = tmp_path / "t.sqlite"
    trials.append(ledger, rows)
    assert main(["ledger", "--ledger", str(ledger)]) == 0
    out = capsys.readouterr().out
    assert (
        "TSLA 2022-10-05..2023-03-30        1       1      1         0               1.111                0          2 (3)  "
        "sma-cross" in out
    )
    assert (
        "other tickers: ticker sets tried over days the family shares (their trials): a best picked among "
        "tickers was picked among these too; the report card's selection row deflates by them too" in out
    )
    assert main(["ledger", "--ledger", str(ledger), "--study", "TSLA 2022-10-05..2023-03-30"]) == 0
    assert "tried over the same days on other tickers too: AMZN 1 trial, MSFT 2 trials" in capsys.readouterr().out
    assert text.ledger_said(fam) == (  # an experiment's significance footnote
        "the trial ledger holds 1 distinct trial (0 controls apart) in the family TSLA 2022-10-05..2023-03-30 on "
        "this machine, and over the same days on other tickers AMZN 1 trial, MSFT 2 trials: `fincon ledger`"
    )


def test_a_config_run_again_with_another_outcome_is_another_draw(tmp_path):
    """Found by hand: the same config run again is the same trial, so the ledger kept the first run's row
    and dropped the rerun's, whatever it traded: a model at temperature without a cache (or a new cache)
    run until a good series came out counted one trial, with the first, unlucky series. A rerun that
    trades the same adds nothing; one that trades otherwise is another draw of the config (the next
    repeat), and a draw seen before adds nothing again."""
    ledger = tmp_path / "t.sqlite"
    first = _row("llm-trader", "2022-10-05", "2023-03-30", "a", 0.01, config="cfg")
    assert trials.append(ledger, [first]) == 1
    assert trials.append(ledger, [first]) == 0  # the same run again
    assert trials.append(ledger, [{**first, "returns_digest": "b", "sharpe_daily": 0.08}]) == 1  # another draw
    assert trials.append(ledger, [{**first, "returns_digest": "b"}]) == 0  # that draw again
    assert trials.append(ledger, [{**first, "returns_digest": "c"}]) == 1
    rows = trials.read(ledger)
    assert [(r["repeat"], r["returns_digest"]) for r in rows] == [(1, "a"), (2, "b"), (3, "c")]
    assert trials.family(ledger, ["TSLA"], "2022-10-05", "2023-03-30").trials == 3
    # an experiment's repeats that traded alike are still one trial and two runs
    same = [{**first, "config_hash": "exp", "repeat": k} for k in (1, 2)]
    assert trials.append(ledger, same) == 2 and trials.append(ledger, same) == 0


def test_one_universe_named_in_another_order_is_one_family(tmp_path, capsys):
    """Found by hand: equal-weight on --ticker TSLA,MSFT and markowitz on --ticker MSFT,TSLA over one
    window were two families, each its own best with "tried before it 0" (and each the other's "other
    tickers"). A family is the set of tickers, in any order."""
    rows = [
        _row("equal-weight", "2022-10-05", "2022-12-30", "a", -0.2, tickers="TSLA,MSFT"),
        _row("markowitz", "2022-10-05", "2022-12-30", "b", -0.04, tickers="MSFT,TSLA"),
        _row("sma-cross", "2022-10-05", "2022-12-30", "c", 0.01, tickers="TSLA"),
    ]
    fams = {f.name: f for f in trials.families(rows)}
    assert sorted(fams) == ["MSFT,TSLA 2022-10-05..2022-12-30", "TSLA 2022-10-05..2022-12-30"]
    assert fams["MSFT,TSLA 2022-10-05..2022-12-30"].trials == 2
    for order in (["TSLA", "MSFT"], ["MSFT", "TSLA"]):
        fam = trials.family_of(rows, order, "2022-11-01", "2022-11-30")
        assert fam.trials == 2 and fam.beside == {"TSLA": 1}, order
    (summ,) = [x for x in trials.summary(rows) if x["family"].startswith("MSFT,TSLA")]
    assert (summ["trials"], summ["best_strategy"], summ["tried_before_best"], summ["other_tickers"]) == (
        2,
        "markowitz",
        1,
        1,
    )


def test_a_trial_too_short_to_score_is_counted_but_never_a_familys_best(tmp_path, capsys):
    """Found by hand: `fincon ledger` named a 2-session run's Sharpe of 16.3 (two daily returns) as its
    family's best, over 60- and 170-session runs, and its daily Sharpe of 1.03 entered the variance every
    DSR of the family is deflated by. A try is a try (N counts it); its Sharpe is noise."""
    rows = [
        _row("sma-cross", "2022-05-02", "2022-09-30", "a", 0.01),
        _row("fincon", "2022-05-02", "2022-09-30", "b", 0.05),
        {**_row("fincon", "2022-05-02", "2022-05-04", "c", 1.03), "n_days": 2},
        {**_row("sma-cross", "2022-05-02", "2022-05-27", "d", -0.02), "n_days": MIN_STAT_DAYS},  # just enough
    ]
    (fam,) = trials.families(rows)
    assert fam.trials == 4 and [r["returns_digest"] for r in fam.scorable] == ["a", "b", "d"]
    s = [0.01, 0.05, -0.02]
    assert fam.sharpe_var() == pytest.approx(sum((x - sum(s) / 3) ** 2 for x in s) / 2, rel=1e-12)
    (summ,) = trials.summary(rows)
    assert summ["best_sharpe"] == pytest.approx(0.05 * 252**0.5) and summ["too_short"] == 1
    assert summ["trials"] == 4 and summ["tried_before_best"] == 1
    ledger = tmp_path / "t.sqlite"
    trials.append(ledger, rows)
    assert main(["ledger", "--ledger", str(ledger)]) == 0
    out = capsys.readouterr().out
    assert "1 trial of fewer than 20 daily returns: counted as tries, never a family's best" in out
    assert ": 4 distinct trials in 1 family (4 runs recorded, 0 controls not counted)" in out  # "in 1 families"


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_a_moved_window_and_flags_no_model_reads_count_as_they_should(tmp_path, monkeypatch, capsys):
    """Issue 42 items 5 and 13: `--start` a day later is a second trial of the
    same family; `--llm-temperature`, `--anonymize` and a cutoff on a strategy
    that calls no model leave it the same trial (the same config hash)."""
    monkeypatch.chdir(tmp_path)
    ledger = tmp_path / "trials.sqlite"
    bh = ["backtest", "--ticker", "TSLA", "--strategy", "buy-and-hold", "--end", "2022-09-30", "--no-progress",
          "--ledger", str(ledger)]  # fmt: skip
    assert main([*bh, "--start", "2022-05-02", "--out", "a"]) == 0
    assert main([*bh, "--start", "2022-05-03", "--out", "b"]) == 0
    for i, flags in enumerate(
        (["--llm-temperature", "0.7"], ["--anonymize"], ["--llm-knowledge-cutoff", "2021-01-01"])
    ):
        assert main([*bh, "--start", "2022-05-02", *flags, "--out", f"c{i}"]) == 0
    rows = trials.read(ledger)  # the flagged runs were the first run again: no row added
    assert [r["start"] for r in rows] == ["2022-05-02", "2022-05-03"]
    capsys.readouterr()
    assert main(["ledger", "--ledger", str(ledger), "--json"]) == 0
    (fam,) = json.loads(capsys.readouterr().out)["families"]
    assert fam["family"] == "TSLA 2022-05-02..2022-09-30" and fam["trials"] == 2 and fam["windows"] == 2


def test_a_familys_best_is_its_best_daily_sharpe_whatever_days_a_year_annualised_it():
    """Found by hand: HON's buy-and-hold beside BTC was annualised with 365 days (a coin's) before a
    run took its own tickers' calendar, and with 252 after: the ledger's best compared annualised
    figures, so a series annualised with 365 beat a better one annualised with 252. The best is the
    best daily Sharpe (what DSR deflates), shown with its own annualised figure."""
    coin_year = _row("buy-and-hold", "2020-07-01", "2020-12-30", "a", 0.10)
    coin_year["sharpe"] = 0.10 * 365**0.5  # 1.911
    stock_year = _row("sma-cross", "2020-07-01", "2020-12-30", "b", 0.11)  # 0.11 * sqrt(252) = 1.746
    (summ,) = trials.summary([coin_year, stock_year])
    assert summ["best_strategy"] == "sma-cross" and summ["best_sharpe"] == pytest.approx(0.11 * 252**0.5)
    assert summ["tried_before_best"] == 1
    # the same series run again once its run took its own calendar: one trial, shown as annualised now
    # (the ledger kept "HON best Sharpe 1.857", its first run's 365 days, for 1.543)
    again = {**coin_year, "sharpe": 0.10 * 252**0.5, "first_seen": "2026-01-02T00:00:00"}
    (summ,) = trials.summary([coin_year, again])
    assert summ["trials"] == 1 and summ["best_sharpe"] == pytest.approx(0.10 * 252**0.5)


def test_the_ledger_says_its_best_is_chosen_by_the_daily_sharpe_and_shown_annualised(tmp_path, capsys):
    """Found in review: `fincon ledger` headed "best Sharpe" a trial chosen by its daily Sharpe of simple
    returns (what DSR deflates) and printed its annualised Sharpe of log returns: finsent's 2.115 (daily
    0.1508) stood as the best of a family holding the team's 2.268 (daily 0.1479). The two rank otherwise
    (log returns, annualised); the header and a line under the table say which is which."""
    team = {**_row("fincon", "2022-09-01", "2023-06-09", "a", 0.1479), "sharpe": 2.268}
    single = {**_row("finsent", "2022-09-01", "2023-06-09", "b", 0.1508), "sharpe": 2.115}
    ledger = tmp_path / "t.sqlite"
    trials.append(ledger, [team, single])
    assert main(["ledger", "--ledger", str(ledger)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[5:9] == ["best", "(by", "daily", "SR)"]
    assert out[2].split()[6:] == ["2.115", "1", "-", "finsent"]  # the daily 0.1508 > 0.1479, shown annualised
    assert (
        "best (by daily SR): the trial with the highest daily Sharpe ratio of simple returns (what DSR deflates), "
        "shown as its annualised Sharpe ratio of daily log returns (`--json`: best_sharpe_daily, best_sharpe)"
    ) in out
    assert main(["ledger", "--ledger", str(ledger), "--json"]) == 0
    (fam,) = json.loads(capsys.readouterr().out)["families"]
    assert (fam["best_strategy"], fam["best_sharpe"], fam["best_sharpe_daily"]) == ("finsent", 2.115, 0.1508)


def test_the_ledgers_page_counts_a_trainings_episodes_as_trials_as_the_code_does():
    """Found in review: docs/experiments.md counted each training episode as a ledger row, then said
    "Training episodes are not trials" a paragraph later; the code records each as a trial of its training
    window's family (test_a_trainings_episodes_are_trials_on_its_window)."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "experiments.md").read_text(encoding="utf-8")
    section = " ".join(page.split("## The trial ledger")[1].split("\n## ")[0].split())
    assert "each episode of a training on its training window" in section
    assert "not trials" not in section
    assert "Each training episode is a trial too, of its training window's family" in section


def test_the_ledger_command_never_advises_off(tmp_path, capsys):
    """Found in review: `fincon ledger --ledger FILE` of a file that is no ledger advised "give another file,
    or off", and `fincon ledger --ledger off` is refused (there is nothing to read)."""
    from fincon.cli.main import main

    (tmp_path / "notes.txt").write_text("not a database\n" * 20)
    assert main(["ledger", "--ledger", str(tmp_path / "notes.txt")]) == 2
    assert capsys.readouterr().err.rstrip().endswith("it was left as it is: give another file")


def test_a_ledger_that_opens_but_takes_no_write_is_refused_before_the_run(tmp_path, monkeypatch, capsys):
    """Found in review: the ledger was only opened before the run; a read-only one (or one locked, or
    on a disk that filled) failed at the INSERT after the commit, a traceback beside a complete run that
    no ledger counted. A write is tried (and undone) before any work; one that fails after the run says
    so in one line and leaves the run as it is."""
    import sqlite3

    ledger = tmp_path / "l.sqlite"
    trials.writable(ledger)
    real = trials._connect
    monkeypatch.setattr(trials, "_connect", lambda p: sqlite3.connect(f"file:{p}?mode=ro", uri=True))
    argv = [*RUN, "--strategy", "sma-cross", "--ledger", str(ledger)]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 2
    assert "cannot write (attempt to write a readonly database)" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()
    # writable at the start, not at the end: the run stands, said to be in no ledger
    monkeypatch.setattr(trials, "_connect", real)
    monkeypatch.setattr(
        trials,
        "append",
        lambda *a: (_ for _ in ()).throw(trials.ConfigError("trial ledger x: cannot write (disk I/O error)")),
    )
    assert main([*argv, "--out", str(tmp_path / "b")]) == 0
    err = capsys.readouterr().err
    assert f"the run is complete in {tmp_path / 'b'}, its trials are in its trials.csv and in no ledger" in err


@pytest.mark.slow
def test_a_trainings_episodes_are_trials_on_its_window(tmp_path, monkeypatch):
    """Found in review: `fincon train` ran each episode (a scored backtest whose CR and Sharpe it prints)
    with no ledger, so two trainings tried on a window and a backtest there were graded as 1 trial of 1.
    Each episode is a trial of the training window's family now, in the ledger --ledger names."""
    monkeypatch.chdir(tmp_path)
    ledger = tmp_path / "trials.sqlite"
    argv = ["train", "--ticker", "TSLA", "--brain", "rules", "--start", "2022-10-05", "--end", "2022-11-15",
            "--param", "fincon.transcripts=text", "--no-progress", "--ledger", str(ledger)]  # fmt: skip
    assert main([*argv, "--episodes", "2", "--out", "a"]) == 0
    assert main([*argv, "--episodes", "1", "--no-cvar", "--out", "b"]) == 0
    rows = trials.read(ledger)
    assert [(r["strategy"], r["study"]) for r in rows] == [("fincon", "TSLA 2022-10-05..2022-11-15")] * len(rows)
    episodes = [json.loads(x)["cr_pct"] for d in ("a", "b") for x in (tmp_path / d / "episodes.jsonl").open()]
    assert len(episodes) == 3 and [r["cr_pct"] for r in rows] == episodes  # each episode once, as it printed
    assert trials.family(ledger, ["TSLA"], "2022-10-05", "2022-11-15").trials == 3  # three series tried
    assert main([*argv[:-2], "--ledger", "off", "--episodes", "1", "--out", "c"]) == 0
    assert len(trials.read(ledger)) == 3  # off: none


def test_a_coins_trials_beside_a_stocks_are_pooled_in_the_stocks_daily_units():
    """Found in review: the card pooled the daily Sharpe ratios of a BTC family (per calendar day, 365 a
    year) with a TSLA family's (per session, 252) as they were: BTC's read sqrt(252/365) of themselves in
    the variance the DSR deflates by (0.002624 where 0.002126). Each is taken to the graded family's days."""
    stock = [_row("sma-cross", "2023-01-02", "2023-06-30", d, x) for d, x in (("a", 0.02), ("b", 0.05))]
    for r in stock:
        r["n_days"] = 123  # sessions in 179 calendar days
    coin = [_row("sma-cross", "2023-01-02", "2023-06-30", d, x, tickers="BTC") for d, x in (("c", 0.03), ("d", 0.09))]
    for r in coin:
        r["n_days"] = 179  # every day
    fam = trials.Family(
        "TSLA", "2023-01-02", "2023-06-30", stock, [trials.Family("BTC", "2023-01-02", "2023-06-30", coin)]
    )
    n, var = fam.picked_among()
    k = (365 / 252) ** 0.5
    assert n == 4 and var == pytest.approx(float(pd.Series([0.02, 0.05, 0.03 * k, 0.09 * k]).var()))
    # two stock families: nothing scaled
    other = [{**r, "tickers": "MSFT", "study": "MSFT 2023-01-02..2023-06-30", "n_days": 123} for r in coin]
    fam = trials.Family(
        "TSLA", "2023-01-02", "2023-06-30", stock, [trials.Family("MSFT", "2023-01-02", "2023-06-30", other)]
    )
    assert fam.picked_among()[1] == pytest.approx(float(pd.Series([0.02, 0.05, 0.03, 0.09]).var()))
