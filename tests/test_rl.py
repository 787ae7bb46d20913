"""The paper's reinforcement-learning baselines (issue 33 item 1): trained on
the bars before the test window only, seeded and reproducible, their model
and training curve saved in the run directory."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fincon.cli.main import main
from fincon.strategies.rl import indicators

RUN = [
    "backtest",
    "--ticker",
    "TSLA",
    "--start",
    "2022-10-05",
    "--end",
    "2023-01-31",
    "--no-progress",
    "--no-benchmark",
]


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
@pytest.mark.parametrize("algo", ["a2c", "dqn"])
def test_the_same_seed_and_data_give_the_same_decisions_byte_for_byte(algo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    import tempfile

    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    argv = [*RUN, "--strategy", algo, "--param", f"{algo}.timesteps=1500", "--param", f"{algo}.seed=7"]
    assert main([*argv, "--out", "a"]) == 0
    assert main([*argv, "--out", "b"]) == 0
    assert (tmp_path / "a" / "decisions.jsonl").read_bytes() == (tmp_path / "b" / "decisions.jsonl").read_bytes()
    for name in ("rl_model.zip", "rl_training.csv", "rl_training.png"):  # the model too (its zip kept times)
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())["strategy_summary"]
    assert summary["rl_trained_on"][1] < "2022-10-05" and summary["rl_trained_on"][0] == "2018-01-02"
    assert summary["rl_algo"] == algo and summary["rl_timesteps"] == 1500
    # no stable-baselines3 logger folder left in the temporary directory (one per training before)
    assert not list((tmp_path / "tmp").glob("SB3-*"))


@pytest.mark.slow
def test_ppo_trains_the_steps_it_was_given_not_a_whole_default_rollout(tmp_path, monkeypatch):
    """stable-baselines3 collects whole rollouts of 2,048 steps before it checks
    the budget: ``ppo.timesteps=300`` trained on 2,048 steps while the summary
    said 300. The rollout is now the budget (fincon.strategies.rl.ppo_rollout)."""
    from stable_baselines3 import PPO

    from fincon.strategies.rl import ppo_rollout

    assert ppo_rollout(300) == {"n_steps": 300, "batch_size": 60}  # 60 divides 300: no truncated minibatch
    assert ppo_rollout(20_000) == {"n_steps": 2048, "batch_size": 64}  # the default budget: SB3's own settings
    monkeypatch.chdir(tmp_path)
    argv = [*RUN, "--strategy", "ppo", "--param", "ppo.timesteps=300", "--out", "p"]
    assert main(argv) == 0
    model = PPO.load(tmp_path / "p" / "rl_model.zip", device="cpu")
    assert model.num_timesteps == 300 and model.n_steps == 300
    assert json.loads((tmp_path / "p" / "summary.json").read_text())["strategy_summary"]["rl_timesteps"] == 300


def test_a_portfolio_is_refused_in_one_line(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    code = main(["backtest", "--tickers", "TSLA,MSFT", "--strategy", "ppo", "--start", "2022-10-05", "--end",
                 "2022-11-30", "--no-progress"])  # fmt: skip
    err = capfd.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "ppo trades one stock" in err[0]
    assert not list(tmp_path.iterdir())


def test_indicators_use_no_later_bar():
    rng = np.random.default_rng(0)
    close = 100 * np.exp(np.cumsum(rng.normal(0, 0.02, 300)))
    high, low = close * 1.01, close * 0.99
    full = indicators(close, high, low)
    cut = indicators(close[:200], high[:200], low[:200])
    np.testing.assert_allclose(full[:200], cut)  # a day's row depends on the bars up to it only


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_finrl_a2c_allocates_the_portfolio_reproducibly(tmp_path, monkeypatch):
    """FinRL's A2C portfolio agent: weights from a softmax over the tickers and
    cash (long only, summing to at most 1), trained before the window, the same
    seed and data giving the same decisions byte for byte."""
    monkeypatch.chdir(tmp_path)
    argv = ["backtest", "--tickers", "TSLA,MSFT,PFE", "--strategy", "finrl-a2c", "--start", "2022-10-05",
            "--end", "2022-11-30", "--param", "finrl-a2c.timesteps=1200", "--param", "finrl-a2c.seed=5",
            "--no-benchmark", "--no-progress"]  # fmt: skip
    assert main([*argv, "--out", "a"]) == 0
    assert main([*argv, "--out", "b"]) == 0
    assert (tmp_path / "a" / "decisions.jsonl").read_bytes() == (tmp_path / "b" / "decisions.jsonl").read_bytes()
    days = [json.loads(x) for x in (tmp_path / "a" / "decisions.jsonl").read_text().splitlines()]
    for d in days:
        w = d["weights"]
        assert set(w) == {"TSLA", "MSFT", "PFE"} and all(x >= 0 for x in w.values()) and sum(w.values()) <= 1 + 1e-9
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())["strategy_summary"]
    assert summary["rl_trained_on"][1] < "2022-10-05" and (tmp_path / "a" / "rl_model.zip").is_file()


@pytest.mark.slow
def test_a_kept_agent_is_loaded_not_retrained_and_decides_as_the_trained_one(tmp_path, monkeypatch):
    """Issue 44 item 1 (an RL model's state between sessions): with ``model_cache`` the agent trained once
    is kept under the hash of what trained it; a second run loads it (no training: learn is never called)
    and takes the decisions of a run that trained it afresh, byte for byte; another seed trains anew."""
    from stable_baselines3 import DQN

    monkeypatch.chdir(tmp_path)
    argv = [*RUN, "--strategy", "dqn", "--param", "dqn.timesteps=500"]
    keep = ["--param", f"dqn.model_cache={tmp_path / 'kept'}"]
    assert main([*argv, "--out", "fresh"]) == 0
    assert main([*argv, *keep, "--out", "first"]) == 0
    assert len(list((tmp_path / "kept").glob("dqn-*.zip"))) == 1

    def no_training(*a, **k):
        raise AssertionError("the kept agent was trained again")

    with monkeypatch.context() as m:
        m.setattr(DQN, "learn", no_training)
        assert main([*argv, *keep, "--out", "loaded"]) == 0
    for name in ("decisions.jsonl", "rl_training.csv", "equity.csv"):
        assert (tmp_path / "loaded" / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes(), name
    assert main([*argv, *keep, "--param", "dqn.seed=3", "--out", "other"]) == 0
    assert len(list((tmp_path / "kept").glob("dqn-*.zip"))) == 2


@pytest.mark.slow
def test_finrls_a2c_and_a2c_keep_their_own_agents(tmp_path, monkeypatch):
    """Found in review: the kept agent was named by its algorithm, so finrl-a2c loaded a2c's single-stock
    agent from the same model_cache and ended in a traceback (its observations are another shape)."""
    monkeypatch.chdir(tmp_path)
    for name in ("a2c", "finrl-a2c"):
        argv = [*RUN, "--strategy", name, "--param", f"{name}.timesteps=300", "--param", f"{name}.model_cache=kept"]
        assert main([*argv, "--out", name]) == 0
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "kept").glob("*.zip")) == ["a2c", "finrl"]
