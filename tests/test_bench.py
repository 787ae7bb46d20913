"""Every ``bench/`` script runs (issue 30 item 6): the smallest configuration
of each, as a user would start it, so none rots unseen. ``bench/team.py
--data DIR`` crashed before its first day on a dict where the typed LLM
settings belong; the typed config's validated copies make that impossible.

These check that the scripts run and print their table, not their timings
(speed goals are read from the scripts' own side-by-side ratios)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fincon.testing import INVESTORBENCH

ROOT = Path(__file__).resolve().parents[1]

# script -> (smallest arguments, a fragment its output must hold)
CASES = {
    "engine": (["--bars", "1500", "--repeat", "1"], "bars"),
    "optimizer": (["--n", "20", "--days", "120", "--repeat", "1"], "OSQP"),
    "train": (["--episodes", "2", "--skip-llm"], "episode"),
    "import": (["--tickers", "2", "--years", "1", "--news", "200", "--skip", "investorbench"], "import: wall"),
    "peer_finsaber": (["--tickers", "1", "--years", "2020", "--news", "5"], "fincon"),
    "stats": (["--universes", "1", "--windows", "2", "--days", "60", "--reps", "200"], "whole table"),
    "masking": (["--end", "2022-10-12", "--repeat", "1"], "masking adds"),
    "forward": (["--sessions", "3"], "verify by hashes"),
    "rl_training": (["--timesteps", "200"], "per ticker"),
    "memory": (
        ["--sizes", "200", "--queries", "3", "--embed-n", "20", "--calls", "1", "--skip", "embedding,transcription"],
        "retrieval",
    ),  # fmt: skip
}


def _run(script: str, args: list[str], tmp_path: Path) -> str:
    env = {**os.environ, "FINCON_CACHE_DIR": os.environ.get("FINCON_CACHE_DIR", str(Path.home() / ".cache" / "fincon"))}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / f"{script}.py"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"bench/{script}.py failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(CASES))
def test_a_bench_script_runs_at_its_smallest(script, tmp_path):
    args, fragment = CASES[script]
    assert fragment.lower() in _run(script, args, tmp_path).lower()


def test_every_bench_script_is_covered():
    scripts = {p.stem for p in (ROOT / "bench").glob("*.py")}
    # below, with a model or a cluster; the recordings are replayed by tests/test_team_live_msft.py and (the
    # forward arena's trader calls) tests/test_forward.py
    live = {"llm", "team", "experiment", "record_team_msft", "record_masking_msft", "record_forward_arena"}
    assert scripts == set(CASES) | live


@pytest.mark.live
def test_the_team_bench_runs_on_a_real_corpus_with_the_small_model(tmp_path):
    """The documented way to measure the live team on a real corpus
    (``bench/team.py --data DIR --llm-days N``), one day with the 0.5B: the
    news analyst and the manager, on short prompts (two live calls; the
    whole team's live day is tests/test_team_live.py's)."""
    from fincon.cli.main import main

    if not (INVESTORBENCH / "msft.json.gz").is_file():
        pytest.skip("the InvestorBench corpus is not beside the repository")
    data = tmp_path / "ib-msft"
    assert main(["data", "import", "investorbench", str(INVESTORBENCH / "msft.json.gz"), "--out", str(data),
                 "--start", "2020-09-25", "--end", "2020-10-09"]) == 0  # fmt: skip
    out = _run("team", ["--data", str(data), "--llm-days", "1", "--model", "qwen2.5-coder-0.5b", "--start",
                        "2020-10-01", "--end", "2020-10-06", "--param", "fincon.analysts=[news]",
                        "--param", "fincon.analyst_budget_tokens=150"], tmp_path)  # fmt: skip
    assert "llm live" in out and "llm replay" in out
    kinds = [line.split()[0] for line in out.split("tokens per call")[1].splitlines()[1:] if line.strip()]
    assert kinds == ["manager", "news", "all"]  # the params reached the team


@pytest.mark.live
def test_the_llm_bench_runs_with_the_small_model(tmp_path):
    assert "calls" in _run("llm", ["--model", "qwen2.5-coder-0.5b", "--calls", "1"], tmp_path).lower()


@pytest.mark.slow
def test_the_experiment_bench_runs_at_its_smallest(tmp_path):
    smallest = ["--repeats", "1", "--episodes", "1", "--cpus", "1", "--ablations", "full", "--bootstrap-reps", "1000"]
    assert "serial" in _run("experiment", smallest, tmp_path).lower()
