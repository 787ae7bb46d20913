"""``finrl-a2c``: the FinCon paper's portfolio DRL baseline (FinRL's A2C allocation).

FinRL's portfolio-allocation agent, as the paper runs it against the team on
its two portfolios: a ``stable-baselines3`` A2C policy whose continuous
action, one number per ticker and one for cash, is turned into the day's
weights by a softmax (long only, the rest in cash, as FinRL's
``StockPortfolioEnv``). The environment is built over fincon's own bars:

* the state: today's weights (cash included) and, per ticker, the
  indicators of :func:`fincon.strategies.rl.indicators` (MACD, RSI, CCI,
  ADX, the 20-day return) from the bars up to the day;
* the reward: the next day's portfolio return of the new weights, less the
  engine's cost (the run's cost models per unit of the book) of the weight
  it moves.

Training, seeding, the saved model and its curve are those of the
single-stock agents (fincon.strategies.rl): once, at the first decision, on
the bars before the test window only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fincon.errors import ConfigError
from fincon.strategies.base import Decision, RunContext
from fincon.strategies.rl import RL_MISSING, RLTrader, check_training_window, indicators, predict


def softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(np.asarray(x, dtype=float) - np.max(x))
    return z / z.sum()


def make_portfolio_env(close: np.ndarray, feats: np.ndarray, unit_cost: np.ndarray):
    """A gymnasium environment over a portfolio's training bars: ``close``
    days x tickers, ``feats`` days x tickers x indicators, ``unit_cost`` days x tickers."""
    try:
        import gymnasium as gym
    except ImportError:
        raise ConfigError(RL_MISSING) from None
    n = close.shape[1]

    class PortfolioEnv(gym.Env):
        metadata: dict[str, Any] = {}

        def __init__(self):
            self.observation_space = gym.spaces.Box(-10.0, 10.0, shape=(n + 1 + feats[0].size,), dtype=np.float32)
            self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(n + 1,), dtype=np.float32)
            self.i = 0
            self.w = np.zeros(n + 1)
            self.w[-1] = 1.0  # all in cash

        def _obs(self):
            return np.concatenate([self.w, feats[self.i].ravel()]).astype(np.float32)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.i, self.w = 0, np.eye(n + 1)[-1]
            return self._obs(), {}

        def step(self, action):
            target = softmax(action)
            cost = float(np.sum(np.abs(target[:n] - self.w[:n]) * unit_cost[self.i]))
            r = close[self.i + 1] / close[self.i] - 1.0
            reward = float(np.dot(target[:n], r)) - cost
            self.w = target
            self.i += 1
            done = self.i >= len(close) - 1
            return self._obs(), reward, done, False, {}

    return PortfolioEnv()


class FinRLA2C(RLTrader):
    """FinRL's A2C portfolio allocation; see the module docstring."""

    name = "finrl-a2c"
    algo = "a2c"

    def check_inputs(self, tickers, first, last) -> None:
        check_training_window(self.name, self.params, first.date())  # any number of tickers: a portfolio

    def start(self, ctx: RunContext) -> None:
        check_training_window(self.name, self.params, ctx.start)
        self.ctx = ctx
        self.model = None
        self.curve = []
        self.weights = np.eye(len(ctx.tickers) + 1)[-1]
        self.trained_on = None

    def _features(self, view, rows: int | None = None) -> np.ndarray:
        """days x tickers x indicators over the view's bars (the last ``rows``)."""
        cols = []
        for t in view.tickers:
            close, high, low = (view.history(t, f, rows) for f in ("close", "high", "low"))
            cols.append(indicators(close, high, low))
        return np.stack(cols, axis=1)

    def _env(self, view, keep: np.ndarray):
        close = np.column_stack([view.history(t, "close")[:-1][keep] for t in view.tickers])
        feats = self._features(view)[:-1][keep]
        high = np.column_stack([view.history(t, "high")[:-1][keep] for t in view.tickers])
        low = np.column_stack([view.history(t, "low")[:-1][keep] for t in view.tickers])
        costs = np.array(
            [[self.ctx.unit_cost(c, h, lo) for c, h, lo in zip(cr, hr, lr)] for cr, hr, lr in zip(close, high, low)]
        )
        return make_portfolio_env(close, feats, costs)

    def decide(self, view) -> Decision | None:
        if self.model is None:
            self._train(view)
        obs = np.concatenate([self.weights, self._features(view, 60)[-1].ravel()]).astype(np.float32)
        action = predict(self.model, obs)
        self.weights = softmax(action)
        weights = {t: round(float(w), 10) for t, w in zip(view.tickers, self.weights)}
        cash = float(self.weights[-1])
        return Decision(
            weights=weights,
            rationale=f"FinRL A2C allocation: {', '.join(f'{t} {w:.2f}' for t, w in weights.items())}, cash {cash:.2f}",
            actions={t: "buy" if w > 0 else "hold" for t, w in weights.items()},
        )
