"""Strategies: the decision interface and the classical baselines."""

from fincon.strategies.base import Decision, RunContext, StopRun, Strategy
from fincon.strategies.registry import make_strategy, strategy_names

__all__ = ["Decision", "RunContext", "StopRun", "Strategy", "make_strategy", "strategy_names"]
