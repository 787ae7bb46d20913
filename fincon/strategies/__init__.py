"""Strategies: the decision interface and the classical baselines."""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.strategies import state as state
    from fincon.strategies.base import (
        Decision as Decision,
        RunContext as RunContext,
        StopRun as StopRun,
        Strategy as Strategy,
    )
    from fincon.strategies.registry import make_strategy as make_strategy, strategy_names as strategy_names
    from fincon.strategies.state import STATE_FILE as STATE_FILE

__getattr__, __dir__ = face(__name__, __file__)
