"""The paper's baselines everywhere (issue 33 item 4): the RL agents and the
single-agent LLM traders run in a rolling evaluation, each RL agent retrained
on its window's own training span, through the local executor and Ray with
the same files (tests/test_experiment_ray.py, on its shared cluster), and
into the HTML report."""

from __future__ import annotations

import json

import pytest

from fincon.cli.main import main
from fincon.testing.badinput import captured

ROLLING = [
    "experiment", "--brain", "rules", "--rolling", "3m", "--step", "3m",
    "--rolling-start", "2022-07-01", "--rolling-end", "2022-12-31", "--universe", "TSLA",
    "--repeats", "1", "--episodes", "1", "--ablations", "full",
    "--baselines", "buy-and-hold,a2c,dqn,finmem,finsent",
    "--param", "a2c.timesteps=300", "--param", "dqn.timesteps=300",
    "--param", "finmem.brain=rules", "--param", "finsent.brain=rules", "--bootstrap-reps", "1000", "--no-progress",
]  # fmt: skip


def run(args: list[str]) -> tuple[int, str, str]:
    return captured(main, args)


@pytest.fixture(scope="module")
def rolled(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper-rolling")
    code, _, err = run([*ROLLING, "--out", str(root / "local")])
    assert code == 0, err
    return root


@pytest.mark.slow
def test_rl_agents_are_retrained_on_each_windows_training_span(rolled):
    listing = json.loads((rolled / "local" / "windows.json").read_text())
    assert len(listing) == 2
    spans = []
    for w in listing:
        for algo in ("a2c", "dqn"):
            s = json.loads((rolled / "local" / w["dir"] / "baselines" / algo / "summary.json").read_text())
            first, last = s["strategy_summary"]["rl_trained_on"]
            # the window's training span, not every bar before the test (a one-split experiment's default)
            assert w["train"]["start"] <= first and last <= w["train"]["end"] < w["test"]["start"], (algo, w)
        spans.append(first)
    assert spans[0] < spans[1]  # retrained per window
    table = (rolled / "local" / "windows.csv").read_text()
    for name in ("a2c", "dqn", "finmem", "finsent", "fincon"):
        assert f",{name}," in table, name


@pytest.mark.slow
def test_the_report_shows_the_new_baselines(rolled, tmp_path):
    from fincon.report import write_report

    write_report([rolled / "local"], tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    for name in ("a2c", "dqn", "finmem", "finsent"):
        assert f">{name}<" in page, name
