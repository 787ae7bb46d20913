"""CVRF belief training learns (issue 9, issue 20): on a corpus whose news
carries a planted hint of the next day's return the news weight rises with
every update and the trained team tests better than the untrained one; on a
corpus without one no weight runs away. Apart from test_training.py so the
two long trainings run on different xdist workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from fincon.agents.beliefs import Beliefs
from fincon.data.events.generator import Planted
from fincon.testing import TEST_WINDOW as TEST
from fincon.testing import TRAIN_WINDOW as TRAIN
from fincon.testing import team_config as cfg_for
from fincon.testing import training_corpus
from fincon.workflow.runner import run_config
from fincon.workflow.training import TrainOptions, train

corpus = training_corpus


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    return corpus(tmp_path_factory.mktemp("planted"), Planted("news", 0.3))


@pytest.fixture(scope="module")
def unplanted(tmp_path_factory) -> Path:
    return corpus(tmp_path_factory.mktemp("unplanted"), None)


def _train(tmp: Path, events: Path, name: str, episodes: int = 4, **kw) -> tuple:
    cfg = cfg_for(*TRAIN, events=str(events))
    rep = train(cfg, tmp / name, TrainOptions(episodes=episodes, **kw), progress=False)
    return rep, [r["weights_in_force"]["news"] for r in rep.rows]


@pytest.mark.slow
def test_planted_source_gains_weight_and_the_trained_team_tests_better(tmp_path, planted):
    rep, _ = _train(tmp_path, planted, "t")
    after = [r["update"]["weights"]["after"] for r in rep.rows[1:]]
    news = [0.3] + [w["news"] for w in after]
    print("news weight after each update:", news, "tau:", [r["tau"] for r in rep.rows[1:]])
    assert all(b > a for a, b in zip(news, news[1:]))  # rises with every update
    assert rep.beliefs.weight("news") == pytest.approx(news[-1])
    assert all(0 < r["tau"] < 1 for r in rep.rows[1:])
    assert rep.beliefs.reflections and (rep.out / "beliefs.png").stat().st_size > 10_000
    assert rep.beliefs.window is not None and (rep.beliefs.window.start, rep.beliefs.window.end) == TRAIN
    assert len(rep.beliefs.window.data_hash) == 64
    # test stage: same window, learned beliefs vs untrained
    trained = run_config(
        cfg_for(*TEST, events=str(planted), beliefs=str(rep.out)), tmp_path / "trained", progress=False
    )
    untrained = run_config(cfg_for(*TEST, events=str(planted)), tmp_path / "untrained", progress=False)
    s_t, s_u = trained.results["fincon"].metrics.sharpe, untrained.results["fincon"].metrics.sharpe
    print(f"test-window Sharpe: trained {s_t:.3f}, untrained {s_u:.3f}")
    assert s_t > s_u
    summary = trained.results["fincon"].strategy_summary
    assert summary["team_beliefs_version"] == rep.beliefs.version and summary["team_alerts"] > 0
    # the ablation: same episodes, beliefs never move
    abl, _ = _train(tmp_path, planted, "abl", episodes=2, learn=False)  # two episodes show it as well as four
    assert abl.beliefs.version == 0 and all("update" not in r for r in abl.rows)
    v0 = Beliefs.model_validate_json((abl.out / "beliefs" / "v0.json").read_text())
    assert abl.beliefs.weights() == v0.weights() and v0.weight("news") == 0.3


@pytest.mark.slow
def test_no_weight_runs_away_on_the_unplanted_corpus(tmp_path, unplanted):
    rep, _ = _train(tmp_path, unplanted, "u")
    first = rep.rows[1]["update"]["weights"]["before"]
    last = rep.rows[-1]["update"]["weights"]["after"]
    total = sum(first.values())
    drift = {k: abs(last[k] - first[k]) / total for k in first}
    print("share drift per source:", drift)
    assert max(drift.values()) < 0.05


# -- 6. resume, replay --------------------------------------------------------------
