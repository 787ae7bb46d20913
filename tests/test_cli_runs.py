"""Runs as users break them: stops before and after day one, signals, two
runs at once, long names, configs moved between directories."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

import fincon.workflow.runner as runner
from fincon.cli.main import main
from fincon.errors import ConfigError, SourceUnavailable
from fincon.risk.metrics import compute_metrics
from fincon.strategies.base import Decision, Strategy
from fincon.strategies.registry import make_strategy

FINCON = [sys.executable, "-m", "fincon.cli.main"]
LONG_RUN = [
    "backtest",
    "--tickers",
    "TSLA,MSFT,PFE,AAPL,AMZN",
    "--strategy",
    "markowitz",
    "--param",
    "markowitz.rebalance_every=1",
    "--start",
    "2018-08-01",
    "--end",
    "2024-03-01",
    "--no-progress",
]


@pytest.mark.parametrize("values", [[], [1_000_000.0]])
def test_metrics_accept_zero_or_one_day(values):
    m = compute_metrics(
        np.array(values), prices=np.array(values), directions=np.zeros(len(values)), traded_value=np.zeros(len(values))
    )
    d = m.as_dict()
    assert d["n_days"] == len(values)
    assert d["cr_pct"] == 0.0 and d["cum_simple_return_pct"] == 0.0
    assert d["final_value"] == 1_000_000.0
    assert d["sharpe"] is None and d["cvar_pct"] is None


class _Flaky(Strategy):
    """Holds TSLA, then its 'server' dies on day ``die_on`` (0 = the first day)."""

    name = "flaky"

    def __init__(self, die_on: int):
        self.die_on = die_on
        self.day = 0

    def decide(self, view):
        if self.day == self.die_on:
            raise SourceUnavailable("LLM server http://127.0.0.1:9/v1 failed 2 attempts (last: connection refused)")
        self.day += 1
        return Decision(weights={"TSLA": 1.0})


@pytest.fixture
def flaky(monkeypatch):
    def make(name, params=None, llm=None):
        if name.startswith("flaky"):
            return _Flaky(int(name.removeprefix("flaky")))
        return make_strategy(name, params, llm)

    monkeypatch.setattr(runner, "make_strategy", make)


def test_first_day_failure_keeps_the_other_strategies(tmp_path, flaky, capsys):
    out = tmp_path / "r"
    code = main(
        [
            "backtest",
            "--ticker",
            "TSLA",
            "--strategy",
            "flaky0,markowitz",
            "--start",
            "2022-10-05",
            "--end",
            "2022-12-30",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 3
    assert "flaky0 finished no day" in err and "failed 2 attempts" in err
    table = json.loads((out / "metrics.json").read_text())
    assert table["flaky0"]["status"] == "failed"
    assert table["markowitz"]["status"] == "complete"
    assert (out / "markowitz" / "equity.csv").is_file() and not (out / "flaky0").exists()


def test_only_strategy_failing_on_day_one_writes_nothing(tmp_path, flaky, capsys):
    out = tmp_path / "r"
    code = main(
        [
            "backtest",
            "--ticker",
            "TSLA",
            "--strategy",
            "flaky0",
            "--start",
            "2022-10-05",
            "--end",
            "2022-12-30",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("fincon: error: flaky0 stopped before finishing its first day: LLM server")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_stop_mid_run_exits_3_and_marks_the_table(tmp_path, flaky, capsys):
    out = tmp_path / "r"
    code = main(
        [
            "backtest",
            "--ticker",
            "TSLA",
            "--strategy",
            "flaky5",
            "--start",
            "2022-10-05",
            "--end",
            "2022-12-30",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert code == 3
    status = next(line for line in captured.out.splitlines() if line.startswith("status"))
    assert "stopped 2022-10-12" in status and "complete" in status  # the benchmark column
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["status"] == "stopped_early" and metrics["n_days"] == 6  # 5 decided, the 6th close
    assert "full window" in captured.err


def _partials(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".partial-" in p.name) if parent.exists() else []


def _wait_for_partial(parent: Path, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    t0 = time.monotonic()
    while not _partials(parent):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < timeout
        time.sleep(0.2)
    time.sleep(0.5)


@pytest.mark.slow
def test_sigterm_removes_the_partial_run_and_sigkill_leftovers_are_swept(tmp_path):
    runs = tmp_path / "runs"
    proc = subprocess.Popen(FINCON + LONG_RUN + ["--out", str(runs / "long")], stderr=subprocess.PIPE, text=True)
    _wait_for_partial(runs, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "terminated" in err
    assert _partials(runs) == [] and not (runs / "long").exists()

    proc = subprocess.Popen(FINCON + LONG_RUN + ["--out", str(runs / "long")], stderr=subprocess.DEVNULL)
    _wait_for_partial(runs, proc)
    proc.kill()
    proc.wait(timeout=30)
    assert len(_partials(runs)) == 1
    res = subprocess.run(
        FINCON
        + ["backtest", "--no-progress", "--start", "2022-10-05", "--end", "2022-10-20", "--out", str(runs / "short")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert f"(process {proc.pid} is gone)" in res.stderr
    assert _partials(runs) == []


@pytest.mark.slow
def test_two_identical_runs_at_once_both_keep_their_result(tmp_path):
    args = FINCON + [
        "backtest",
        "--tickers",
        "TSLA,MSFT",
        "--strategy",
        "markowitz",
        "--no-progress",
        "--out",
        str(tmp_path / "same"),
    ]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    a, b = tmp_path / "same", tmp_path / "same-2"
    assert (a / "equity.csv").read_bytes() == (b / "equity.csv").read_bytes()
    printed = sorted(
        line.split(": ", 1)[1] for out, _ in results for line in out.splitlines() if line.startswith("run directory")
    )
    assert printed == [str(a), str(b)]


def test_long_default_names_are_shortened(tmp_path, monkeypatch):
    from fincon.config import load_config
    from fincon.data.sources import SampleSource

    tickers = SampleSource().tickers()
    cfg = load_config(
        None,
        {"tickers": tickers, "strategies": ["buy-and-hold", "markowitz", "equal-weight", "sma-cross", "llm-trader"]},
    )
    name = runner.default_out(cfg).name
    assert len(name) <= runner.MAX_NAME + 20 and f"{len(tickers)}tickers" in name
    short = load_config(None, {"tickers": ["TSLA"], "strategies": ["markowitz"]})
    assert runner.default_out(short).name == "markowitz_TSLA_2022-10-05_2023-06-09"


def test_saved_config_is_resolved_and_works_from_another_directory(tmp_path, monkeypatch):
    import gzip

    data = tmp_path / "proj" / "csvs"
    data.mkdir(parents=True)
    src = Path(__file__).resolve().parents[1] / "fincon" / "data" / "sample" / "prices" / "TSLA.csv.gz"
    (data / "TSLA.csv").write_bytes(gzip.decompress(src.read_bytes()))
    monkeypatch.chdir(tmp_path / "proj")
    assert (
        main(
            [
                "backtest",
                "--ticker",
                "TSLA",
                "--data",
                "csvs",
                "--strategy",
                "sma-cross",
                "--no-progress",
                "--out",
                "first",
            ]
        )
        == 0
    )
    saved = (tmp_path / "proj" / "first" / "config.yaml").read_text()
    assert f"dir: {data}" in saved
    assert "fast: 10" in saved and "slow: 30" in saved  # defaults are in the resolved config
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    assert (
        main(
            [
                "backtest",
                "--config",
                str(tmp_path / "proj" / "first" / "config.yaml"),
                "--no-progress",
                "--out",
                "again",
            ]
        )
        == 0
    )
    for f in ("config.yaml", "equity.csv", "decisions.jsonl", "metrics.json"):
        assert (other / "again" / f).read_bytes() == (tmp_path / "proj" / "first" / f).read_bytes(), f


def test_help_imports_no_numerical_library():
    code = (
        "import sys; from fincon.cli.main import build_parser; build_parser(); "
        "heavy = [m for m in ('sklearn', 'cvxpy', 'pandas', 'backtrader', 'chromadb', 'torch') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == ""


def test_replace_swaps_in_a_new_run_only_over_a_fincon_run(tmp_path):
    out = tmp_path / "demo"
    args = [
        "backtest",
        "--ticker",
        "TSLA",
        "--start",
        "2022-10-05",
        "--end",
        "2022-10-20",
        "--no-progress",
        "--out",
        str(out),
        "--replace",
    ]
    assert main(args) == 0 and main(args) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    assert main(args[:-3] + ["--out", str(tmp_path / "mine"), "--replace"]) == 2
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_a_config_with_an_llm_block_loads_without_the_llm_extra(tmp_path):
    """A bare install (no httpx: only the llm extra brings it) still validates
    a run config's llm block: the endpoint rules live apart from the HTTP backend."""
    cfg = tmp_path / "run.yaml"
    cfg.write_text("llm:\n  backend: openai\n  base_url: http://127.0.0.1:8080/v1\n  temprature: 0.2\n")
    code = (
        "import sys; sys.modules['httpx'] = None\n"
        "from fincon.config import load_config\n"
        "from fincon.errors import ConfigError\n"
        f"try:\n    load_config({str(cfg)!r})\nexcept ConfigError as e:\n    print(e)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "temprature" in res.stdout


def test_the_llm_block_is_typed_and_written_back_as_set(tmp_path):
    """``RunConfig.llm`` is an LLMSettings (typed attributes, not a dict); the
    resolved config.yaml and what a strategy merges over its own defaults are
    the keys the config set, so the team's larger context is not overridden
    by the bare settings' default when the file is read back."""
    from fincon.config import load_config
    from fincon.llm.settings import LLMSettings

    cfg = load_config(None, {"llm": {"model": "qwen2.5-coder-0.5b", "temperature": 0.2}})
    assert isinstance(cfg.llm, LLMSettings)
    assert cfg.llm.temperature == 0.2 and cfg.llm.n_ctx == 2048  # typed, defaults filled
    assert cfg.llm.model_dump(mode="json", exclude_unset=True) == {"model": "qwen2.5-coder-0.5b", "temperature": 0.2}
    again = load_config(None, yaml.safe_load(cfg.to_yaml()))
    assert (
        again.llm.model_dump(mode="json", exclude_unset=True) == cfg.llm.model_dump(mode="json", exclude_unset=True)
        and again.to_yaml() == cfg.to_yaml()
    )
    assert (
        load_config(None, {}).llm.model_dump(mode="json", exclude_unset=True) == {}
        and "llm: {}" in load_config(None, {}).to_yaml()
    )
    with pytest.raises(ConfigError, match=r"llm\.n_ctx"):
        load_config(None, {"llm": {"n_ctx": 10}})
    with pytest.raises(ConfigError, match="mapping"):
        load_config(None, {"llm": "gpt-4o"})


def test_strategy_params_are_typed_when_the_config_loads(tmp_path):
    """``RunConfig.strategy_params`` holds each strategy's own params model
    (typed attributes, defaults filled), validated when the config loads, so
    a bad key fails before any data is read; the YAML written back holds only
    the keys set, and reads back to the same models."""
    from fincon.agents.team import FinConParams
    from fincon.config import load_config
    from fincon.strategies.markowitz import Markowitz

    cfg = load_config(
        None,
        {
            "strategies": ["fincon", "markowitz"],
            "strategy_params": {"fincon": {"brain": "rules", "candidates": ["tsla"]}, "markowitz": {"lookback": "30"}},
        },
    )
    team, mk = cfg.strategy_params["fincon"], cfg.strategy_params["markowitz"]
    assert isinstance(team, FinConParams) and isinstance(mk, Markowitz.Params)
    assert team.candidates == ["TSLA"] and team.memory_k == 5  # normalised, defaults filled
    assert mk.lookback == 30 and isinstance(mk.lookback, int)
    assert cfg.params("fincon") == {"brain": "rules", "candidates": ["TSLA"]} and cfg.params("sma-cross") == {}
    dumped = yaml.safe_load(cfg.to_yaml())["strategy_params"]
    assert dumped == {"fincon": {"brain": "rules", "candidates": ["TSLA"]}, "markowitz": {"lookback": 30}}
    assert load_config(None, yaml.safe_load(cfg.to_yaml())).to_yaml() == cfg.to_yaml()
    assert cfg.with_params("fincon", {"brain": "rules", "memory_k": 2}).strategy_params["fincon"].memory_k == 2
    with pytest.raises(ConfigError, match=r"strategy_params\.fincon\.memory_k"):
        cfg.with_params("fincon", {"memory_k": 9})  # validated, not stored as given
    with pytest.raises(ConfigError, match=r"unknown key 'strategy_params\.markowitz\.lookbak'"):
        load_config(None, {"strategy_params": {"markowitz": {"lookbak": 60}}})
    with pytest.raises(ConfigError, match=r"strategy_params\.sma_cross: unknown strategy .*did you mean 'sma-cross'"):
        load_config(None, {"strategy_params": {"sma_cross": {"fast": 5}}})
    with pytest.raises(ConfigError, match=r"strategy_params\.markowitz must be a mapping"):
        load_config(None, {"strategy_params": {"markowitz": 60}})


def test_a_strategy_runs_beside_its_variant_with_its_own_parameters(tmp_path):
    """Issue 44 (the arena: the team beside its ablations): ``NAME@LABEL`` is a second NAME with its own
    ``strategy_params``; each gets its own run folder, and a variant with the same parameters trades
    exactly as its base does (so a difference is the parameters', nothing else)."""
    out = tmp_path / "bt"
    argv = ["backtest", "--ticker", "TSLA", "--start", "2022-10-05", "--end", "2022-12-30", "--no-progress",
            "--no-benchmark", "--ledger", "off", "--out", str(out),
            "--strategy", "sma-cross,sma-cross@slow,sma-cross@same",
            "--param", "sma-cross.fast=2", "--param", "sma-cross.slow=4",
            "--param", "sma-cross@slow.fast=5", "--param", "sma-cross@slow.slow=20",
            "--param", "sma-cross@same.fast=2", "--param", "sma-cross@same.slow=4"]  # fmt: skip
    assert main(argv) == 0
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert {k: cfg["strategy_params"]["sma-cross@slow"][k] for k in ("fast", "slow")} == {"fast": 5, "slow": 20}
    trades = {n: (out / n / "trades.csv").read_text() for n in ("sma-cross", "sma-cross@slow", "sma-cross@same")}
    assert trades["sma-cross"] == trades["sma-cross@same"] != trades["sma-cross@slow"]
    metrics = json.loads((out / "metrics.json").read_text())
    assert {"sma-cross", "sma-cross@slow", "sma-cross@same"} <= set(json.dumps(metrics).split('"'))


def test_a_config_that_names_a_data_folder_reads_it(tmp_path):
    """Found in review: a config with ``data: {dir: DIR}`` and no source ran on the bundled sample
    (exit 0, ``source=sample``; a folder that did not exist too) and its config.yaml recorded both the
    folder and the sample. As ``--data`` does, a folder implies source csv; a folder beside another
    source is refused naming both keys."""
    from fincon.config import load_config

    (tmp_path / "prices").mkdir()
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"tickers: [TSLA]\ndata: {{dir: {tmp_path}}}\n")
    assert load_config(cfg).data.source == "csv"
    cfg.write_text(f"tickers: [TSLA]\ndata: {{source: sample, dir: {tmp_path}}}\n")
    with pytest.raises(ConfigError, match="data.source sample does not read data.dir .* drop one of them"):
        load_config(cfg)


def test_a_config_takes_the_fill_as_the_flag_spells_it(tmp_path):
    """Found in review: ``broker: {fill: next-open}``, the flag's own spelling, was refused with "Input
    should be 'close' or 'next_open'"."""
    from fincon.config import load_config

    cfg = tmp_path / "run.yaml"
    cfg.write_text("broker: {fill: next-open}\n")
    assert load_config(cfg).broker.fill == "next_open"
