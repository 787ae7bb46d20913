"""Reinforcement-learning baselines of the FinCon paper: A2C, PPO and DQN on one stock.

The paper compares its team with FinRL-style DRL agents trained on the bars
before the test window. Here each is a ``stable-baselines3`` agent on a
``gymnasium`` environment built over fincon's own bars:

* the state FinRL uses: the position held, the close's 20-day return, and
  technical indicators from the bars up to the day (MACD over the close,
  RSI 14, CCI 20, ADX 14), scaled to comparable ranges;
* discrete actions for all three (0 short, 1 keep the position, 2 long; the
  paper's A2C and PPO act on a continuous share count, noted where the
  tables are);
* the reward: the next day's return of the position taken, less the
  engine's cost of the trade (the run's cost models, fincon.engine.costs,
  read through the run context) per unit of the book it changes.

Training happens once, at the first decision: on the bars before the test
window (from the first bar loaded, the warm-up, to the day before the test
start; ``train_start`` / ``train_end`` to choose), never on the test window,
so perturbing any bar after day t changes no decision up to t. It is seeded
(``seed``; torch on one thread while it trains and acts) so the same seed and
data give byte-identical decisions. The trained model (``rl_model.zip``) and
its training curve (``rl_training.csv``, ``rl_training.png``) go into the run
directory.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping

import numpy as np
from pydantic import ConfigDict, Field

from fincon.errors import ConfigError
from fincon.files import write_atomic
from fincon.strategies.base import Decision, RunContext, Strategy
from fincon.validation import Settings

log = logging.getLogger(__name__)

ALGOS = ("a2c", "ppo", "dqn")
RL_MISSING = (
    "the reinforcement-learning baselines need stable-baselines3 and gymnasium: "
    "pip install 'fincon[rl]' (make install does)"
)


class RLParams(Settings):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    #: environment steps of training (one step a training day; the paper's FinRL runs use tens of thousands)
    timesteps: int = Field(20_000, ge=100, le=5_000_000)
    seed: int = Field(0, ge=0, le=2**31 - 1)
    #: the training bars: default from the first bar loaded to the day before the test start
    train_start: dt.date | None = None
    train_end: dt.date | None = None
    #: the share of the book a long or short position takes
    size: float = Field(1.0, gt=0.0, le=1.0)
    #: a folder keeping each trained agent under the hash of what trained it (the algorithm, these params, the
    #: training bars and their costs): a later run trained the same loads it instead of training again (a
    #: forward step sets its journal's own, so its replay of the journal so far does not retrain every session)
    model_cache: Path | None = None


# -- indicators (numpy over the bars up to each day) -------------------------------------


def _ema(x: np.ndarray, n: int) -> np.ndarray:
    out = np.empty_like(x)
    a = 2.0 / (n + 1)
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = a * x[i] + (1 - a) * out[i - 1]
    return out


def indicators(close: np.ndarray, high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """days x 5: MACD / close, RSI 14 / 100, CCI 20 / 200, ADX 14 / 100, the 20-day return;
    each day's row from the bars up to it (an exponential or trailing window)."""
    n = len(close)
    macd = (_ema(close, 12) - _ema(close, 26)) / close
    diff = np.diff(close, prepend=close[0])
    up, down = _ema(np.maximum(diff, 0), 27), _ema(np.maximum(-diff, 0), 27)  # Wilder's 14 as an EMA
    rsi = np.where(up + down > 0, up / np.maximum(up + down, 1e-12), 0.5)
    tp = (high + low + close) / 3
    cci = np.zeros(n)
    adx = np.zeros(n)
    ret20 = np.zeros(n)
    for i in range(n):
        w = tp[max(0, i - 19) : i + 1]
        md = np.mean(np.abs(w - w.mean()))
        cci[i] = (tp[i] - w.mean()) / (0.015 * md) if md > 0 else 0.0
        j = max(0, i - 20)
        ret20[i] = close[i] / close[j] - 1.0
    up_move = np.diff(high, prepend=high[0])
    down_move = -np.diff(low, prepend=low[0])
    plus_dm = np.where((up_move > down_move) & (up_move > 0), up_move, 0.0)
    minus_dm = np.where((down_move > up_move) & (down_move > 0), down_move, 0.0)
    prev_close = np.concatenate([[close[0]], close[:-1]])
    tr = np.maximum(high - low, np.maximum(np.abs(high - prev_close), np.abs(low - prev_close)))
    atr = _ema(tr, 27)
    plus_di = 100 * _ema(plus_dm, 27) / np.maximum(atr, 1e-12)
    minus_di = 100 * _ema(minus_dm, 27) / np.maximum(atr, 1e-12)
    dx = 100 * np.abs(plus_di - minus_di) / np.maximum(plus_di + minus_di, 1e-12)
    adx = _ema(dx, 27)
    feats = np.column_stack([macd * 10, rsi, np.clip(cci / 200, -3, 3), adx / 100, np.clip(ret20, -1, 1)])
    return np.nan_to_num(feats.astype(np.float32))


# -- the environment ---------------------------------------------------------------------


def make_env(close: np.ndarray, feats: np.ndarray, unit_cost: np.ndarray, size: float):
    """A gymnasium environment over one stock's training bars."""
    try:
        import gymnasium as gym
    except ImportError:
        raise ConfigError(RL_MISSING) from None

    class TradingEnv(gym.Env):
        metadata: dict[str, Any] = {}

        def __init__(self):
            self.observation_space = gym.spaces.Box(-10.0, 10.0, shape=(feats.shape[1] + 1,), dtype=np.float32)
            self.action_space = gym.spaces.Discrete(3)
            self.i = 0
            self.pos = 0.0

        def _obs(self):
            return np.concatenate([[np.float32(self.pos)], feats[self.i]]).astype(np.float32)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.i, self.pos = 0, 0.0
            return self._obs(), {}

        def step(self, action):
            target = {0: -size, 1: self.pos, 2: size}[int(action)]
            cost = abs(target - self.pos) * float(unit_cost[self.i])
            r = float(close[self.i + 1] / close[self.i] - 1.0)
            reward = target * r - cost
            self.pos = target
            self.i += 1
            done = self.i >= len(close) - 1
            return self._obs(), float(reward), done, False, {}

    return TradingEnv()


#: the fewest bars an agent trains on
MIN_TRAINING_BARS = 60


def check_training_window(name: str, params, start: dt.date | None) -> None:
    """A ``train_end`` (or ``train_start``) on or after the test window's first
    day (``start``) is refused, never cut back in silence: the agent trains only
    on the bars before the window."""
    for key in ("train_start", "train_end"):
        day = getattr(params, key, None)
        if day is not None and start is not None and day >= start:
            raise ConfigError(
                f"--param {name}.{key}={day} is inside the test window (it starts {start}): the agent trains "
                f"only on the bars before it; give a day before {start} or leave {key} out"
            )


@contextmanager
def one_thread() -> Iterator[None]:
    """torch on one thread for the block: a seeded network trains and predicts the same, bit for bit."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def save_model(model: Any, path: Path) -> None:
    """``model`` as stable-baselines3 saves it, byte for byte the same for the same network: its zip
    kept the time its training started (``start_time``) and its episodes' wall times (``t`` of
    ``ep_info_buffer``), each entry's write time and, in ``data``
    (whose ``:serialized:`` fields are what loads), the addresses of the policy's functions
    (``<function ... at 0x7f93...>``), so two identical runs wrote two rl_model.zip. Written whole or
    not at all."""
    import io
    import re
    import zipfile

    model.start_time = 0
    for episode in getattr(model, "ep_info_buffer", None) or ():
        if "t" in episode:
            episode["t"] = 0.0
    raw = io.BytesIO()
    model.save(raw)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw.getvalue())) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            body = zin.read(info)
            if info.filename == "data":
                body = re.sub(rb" at 0x[0-9a-f]+>", b">", body)
            zout.writestr(zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0)), body)
    write_atomic(path, out.getvalue())


def predict(model: Any, obs: np.ndarray) -> Any:
    """The policy's deterministic action for ``obs``, on one thread."""
    with one_thread():
        action, _ = model.predict(obs, deterministic=True)
    return action


class RLTrader(Strategy):
    """An A2C, PPO or DQN agent on one stock; see the module docstring."""

    algo: Literal["a2c", "ppo", "dqn"] = "a2c"
    Params = RLParams
    warmup = 5000  # every bar before the window the data has: the training span

    def __init__(self, params: RLParams | None = None):
        self.params = params or RLParams()
        self.model = None
        self.curve: list[tuple[int, float]] = []
        self.pos = 0.0

    def check_inputs(self, tickers, first, last) -> None:
        self._check(tickers, first.date())

    def _check(self, tickers, start: dt.date | None) -> None:
        if len(tickers) != 1:
            raise ConfigError(
                f"{self.name} trades one stock (the paper's single-stock task); give one --ticker "
                "(finrl-a2c allocates a portfolio)"
            )
        check_training_window(self.name, self.params, start)

    def start(self, ctx: RunContext) -> None:
        self._check(ctx.tickers, ctx.start)
        self.ctx = ctx
        self.model = None
        self.curve = []
        self.pos = 0.0
        self.trained_on: tuple[str, str] | None = None

    # -- forward steps: the trained model is saved by stable-baselines3, the rest pickled ------------
    def live_objects(self) -> Mapping[str, Any]:
        return {"ctx": getattr(self, "ctx", None), "model": self.model}

    def save_state(self, folder: Path, live: Mapping[str, Any]) -> None:
        super().save_state(folder, live)
        if self.model is not None:
            self.model.save(str(folder / "model.zip"))

    def load_state(self, folder: Path, ctx: RunContext) -> None:
        super().load_state(folder, ctx)
        if (folder / "model.zip").is_file():
            from stable_baselines3 import A2C, DQN, PPO

            self.model = {"a2c": A2C, "ppo": PPO, "dqn": DQN}[self.algo].load(str(folder / "model.zip"), device="cpu")

    def _training_rows(self, view) -> np.ndarray:
        """Which rows of the view before its day train the agent (the test
        window's first day and after: never)."""
        p = self.params
        dates = view.dates()[:-1]  # the bars before the test window's first day: never the window itself
        keep = np.ones(len(dates), dtype=bool)
        if p.train_start is not None:
            keep &= dates.date >= p.train_start
        if p.train_end is not None:
            keep &= dates.date <= p.train_end
        if keep.sum() < MIN_TRAINING_BARS:
            raise ConfigError(
                f"{self.name}: only {int(keep.sum())} training bars before {view.date.date()} "
                f"(need {MIN_TRAINING_BARS}); start the test window later or widen train_start/train_end"
            )
        self.trained_on = (str(dates[keep][0].date()), str(dates[keep][-1].date()))
        return keep

    def _env(self, view, keep: np.ndarray):
        """The training environment over the rows ``keep``."""
        t = view.tickers[0]
        close, high, low = (view.history(t, f)[:-1][keep] for f in ("close", "high", "low"))
        feats = indicators(close, high, low)
        costs = np.array([self.ctx.unit_cost(c, h, lo) for c, h, lo in zip(close, high, low)])
        return make_env(close, feats, costs, self.params.size)

    def _train(self, view) -> None:
        try:
            from stable_baselines3 import A2C, DQN, PPO
        except ImportError:
            raise ConfigError(RL_MISSING) from None
        p = self.params
        keep = self._training_rows(view)
        env = self._env(view, keep)
        cls = {"a2c": A2C, "ppo": PPO, "dqn": DQN}[self.algo]
        kept = self._kept(view, keep) if p.model_cache is not None else None
        if kept is not None and kept.with_suffix(".zip").is_file():  # trained the same before: loaded, not retrained
            model = cls.load(str(kept.with_suffix(".zip")), device="cpu")
            if model.observation_space == env.observation_space and model.action_space == env.action_space:
                self.model = model
                self.curve = [tuple(x) for x in json.loads(kept.with_suffix(".json").read_text())]
                return
            log.warning("%s: %s holds another kind of agent; trained anew", self.name, kept.with_suffix(".zip"))
        with one_thread():  # the same seed and data give the same network, bit for bit
            kw: dict[str, Any] = {"seed": p.seed, "verbose": 0, "device": "cpu"}
            if self.algo == "dqn":
                kw.update(learning_starts=min(1000, p.timesteps // 10), buffer_size=min(50_000, p.timesteps))
            if self.algo == "ppo":
                kw.update(ppo_rollout(p.timesteps))
            self.model = cls("MlpPolicy", env, **kw)
            # no logger output: stable-baselines3's default one makes a folder in /tmp per training
            from stable_baselines3.common.logger import Logger

            self.model.set_logger(Logger(folder=None, output_formats=[]))
            curve = self.curve

            from stable_baselines3.common.callbacks import BaseCallback

            class Curve(BaseCallback):
                def _on_step(self) -> bool:
                    for done, r in zip(self.locals.get("dones", []), self.locals.get("rewards", [])):
                        self._total = getattr(self, "_total", 0.0) + float(r)
                        if done:
                            curve.append((self.num_timesteps, round(self._total, 8)))
                            self._total = 0.0
                    return True

            self.model.learn(total_timesteps=p.timesteps, callback=Curve())
        if kept is not None:
            kept.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(kept.with_suffix(".json"), json.dumps(self.curve))
            save_model(self.model, kept.with_suffix(".zip"))  # the model last: its presence means both are whole

    def _kept(self, view, keep: np.ndarray) -> Path:
        """Where the agent trained on the rows ``keep`` is kept: the hash of the algorithm, its params,
        and each ticker's training bars and their unit costs, so that any change trains anew."""
        p = self.params
        # the strategy's name: finrl-a2c is an a2c of another environment (it loaded a2c's agent)
        h = hashlib.sha256(f"{self.name}:{p.model_dump_json(exclude={'model_cache'})}".encode())
        for t in view.tickers:
            close, high, low = (view.history(t, f)[:-1][keep] for f in ("close", "high", "low"))
            costs = [self.ctx.unit_cost(c, hi, lo) for c, hi, lo in zip(close, high, low)]
            for arr in (close, high, low, costs):
                h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
        return Path(str(p.model_cache)) / f"{self.name}-{h.hexdigest()[:24]}"

    def decide(self, view) -> Decision | None:
        if self.model is None:
            self._train(view)
        t = view.tickers[0]
        close, high, low = (view.history(t, f, 60) for f in ("close", "high", "low"))
        obs = np.concatenate([[np.float32(self.pos)], indicators(close, high, low)[-1]]).astype(np.float32)
        action = predict(self.model, obs)
        target = {0: -self.params.size, 1: self.pos, 2: self.params.size}[int(action)]
        word = {0: "sell", 1: "hold", 2: "buy"}[int(action)]
        if target == self.pos:
            return Decision(actions={t: "hold"}, rationale=f"{self.algo.upper()} policy: keep")
        self.pos = target
        return Decision.from_action(t, word, self.params.size, rationale=f"{self.algo.upper()} policy: {word}")

    def finish(self, ctx: RunContext) -> dict[str, Any]:
        if self.model is None:
            return {}
        run = Path(ctx.run_dir)
        save_model(self.model, run / "rl_model.zip")
        lines = ["timestep,episode_reward"] + [f"{s},{r:.8f}" for s, r in self.curve]
        (run / "rl_training.csv").write_text("\n".join(lines) + "\n")
        if self.curve:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(7, 3))
            ax.plot([s for s, _ in self.curve], [r for _, r in self.curve])
            ax.set_xlabel("timestep")
            ax.set_ylabel("episode reward (training bars)")
            ax.set_title(f"{self.algo.upper()} training")
            fig.tight_layout()
            fig.savefig(run / "rl_training.png", dpi=80, metadata={"Software": None})
            plt.close(fig)
        return {
            "rl_algo": self.algo,
            "rl_timesteps": self.params.timesteps,
            "rl_seed": self.params.seed,
            "rl_trained_on": list(self.trained_on or ()),
            "rl_episodes": len(self.curve),
        }


def ppo_rollout(timesteps: int) -> dict[str, int]:
    """PPO's rollout for a training of ``timesteps`` steps: stable-baselines3
    collects whole rollouts of ``n_steps`` (2,048 by default) before it
    checks the budget, so ``timesteps=200`` trained on 2,048 steps, ten
    times what the run reported. Below 2,048 the rollout is the budget
    itself, in minibatches that divide it (at most PPO's 64, so SB3 warns of
    no truncated batch); from 2,048 on, SB3's defaults, unchanged."""
    n_steps = min(2048, timesteps)
    return {"n_steps": n_steps, "batch_size": max(d for d in range(1, 65) if n_steps % d == 0)}


class A2CTrader(RLTrader):
    name = "a2c"
    algo = "a2c"


class PPOTrader(RLTrader):
    name = "ppo"
    algo = "ppo"


class DQNTrader(RLTrader):
    name = "dqn"
    algo = "dqn"
