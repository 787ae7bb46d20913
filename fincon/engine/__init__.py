"""The engine: backtrader-driven daily loop, run directories and plots.

It runs any :class:`~fincon.strategies.base.Strategy` it is handed and never
imports the agents nor builds a strategy by name (that is
:mod:`fincon.workflow.runner`); see docs/architecture.md.

Its names load on first use: the config imports the cost models
(:mod:`fincon.engine.costs`) while ``fincon --help`` is built, which must
not import pandas or backtrader.
"""

from typing import Any

__all__ = ["BacktestResult", "BrokerSettings", "run_backtest"]


def __getattr__(name: str) -> Any:
    if name in ("BacktestResult", "run_backtest"):
        from fincon.engine import backtest

        return getattr(backtest, name)
    if name == "BrokerSettings":
        from fincon.engine.broker import BrokerSettings

        return BrokerSettings
    raise AttributeError(f"module 'fincon.engine' has no attribute {name!r}")
