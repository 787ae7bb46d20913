"""CVRF belief training learns (issue 9, issue 20): on a corpus whose news
carries a planted hint of the next day's return the news weight rises with
every update and the trained team tests better than the untrained one; on a
corpus without one no weight runs away. Apart from test_training.py so the
two long trainings run on different xdist workers.

The planted training is the one ``notebooks/train_beliefs.ipynb`` walks a
user through: the test runs that notebook top to bottom and checks the
directories it wrote, instead of training the same four episodes again."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from fincon.agents.beliefs import Beliefs
from fincon.data.events.generator import Planted
from fincon.testing import TRAIN_WINDOW as TRAIN, team_config as cfg_for, training_corpus
from fincon.workflow.training import TrainOptions, train

corpus = training_corpus
NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "train_beliefs.ipynb"
#: appended to the notebook: where its training and its two test runs are
WHERE = 'print("RUNS " + json.dumps({"train": str(rep.out), "trained": str(trained.run_dirs["fincon"]), "untrained": str(untrained.run_dirs["fincon"])}))'


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
@pytest.mark.notebook
def test_the_training_notebook_learns_the_planted_source_and_the_trained_team_tests_better(tmp_path, monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebook's tempfile.mkdtemp() lands here, not in /tmp
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(WHERE))
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]  # its own asserts included
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 2  # beliefs.png and the test window's curves
    runs = json.loads(next(o["text"] for o in outputs if o.get("text", "").startswith("RUNS "))[5:])
    train_dir, trained, untrained = (Path(runs[k]) for k in ("train", "trained", "untrained"))
    assert train_dir.parent.parent == tmp_path  # the notebook's own temp dir, under this test's

    rows = [json.loads(line) for line in (train_dir / "episodes.jsonl").read_text().splitlines()]
    assert [r["episode"] for r in rows] == [1, 2, 3, 4]
    after = [r["update"]["weights"]["after"] for r in rows[1:]]
    news = [0.3] + [w["news"] for w in after]
    print("news weight after each update:", news, "tau:", [r["tau"] for r in rows[1:]])
    assert all(b > a for a, b in zip(news, news[1:]))  # rises with every update
    assert all(0 < r["tau"] < 1 for r in rows[1:])
    beliefs = Beliefs.model_validate_json((train_dir / "beliefs.json").read_text())
    assert beliefs.weight("news") == pytest.approx(news[-1])
    assert beliefs.reflections and (train_dir / "beliefs.png").stat().st_size > 10_000
    assert beliefs.window is not None and (beliefs.window.start, beliefs.window.end) == TRAIN
    assert len(beliefs.window.data_hash) == 64
    # test stage: the next window, learned beliefs vs untrained
    sharpe = {k: json.loads((d / "metrics.json").read_text())["sharpe"] for k, d in [("t", trained), ("u", untrained)]}
    print(f"test-window Sharpe: trained {sharpe['t']:.3f}, untrained {sharpe['u']:.3f}")
    assert sharpe["t"] > sharpe["u"]
    summary = json.loads((trained / "summary.json").read_text())["strategy_summary"]
    assert summary["team_beliefs_version"] == beliefs.version == 3 and summary["team_alerts"] > 0
    assert json.loads((untrained / "summary.json").read_text())["strategy_summary"]["team_beliefs_version"] == 0


@pytest.mark.slow
def test_the_ablation_trains_the_same_episodes_and_its_beliefs_never_move(tmp_path, planted):
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
