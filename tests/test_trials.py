"""The trial ledger (issue 32 item 1): every scored strategy is a row, a rerun
of the same config is the same trial, and `fincon ledger` counts them."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from fincon.cli.main import main
from fincon.workflow import trials

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
    assert trials.count(ledger, ["TSLA 2022-10-05..2022-11-30"]) == 3
    capsys.readouterr()
    assert main(["ledger", "--ledger", str(ledger), "--json"]) == 0
    (study,) = json.loads(capsys.readouterr().out)["studies"]
    best = max((r for r in rows if r["sharpe"] is not None), key=lambda r: r["sharpe"])
    assert study["trials"] == 3 and study["best_sharpe"] == best["sharpe"]
    assert study["tried_before_best"] == [r["config_hash"] for r in rows].index(best["config_hash"])


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
