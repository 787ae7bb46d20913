"""The engine: backtrader-driven daily loop, run directories and plots.

It runs any :class:`~fincon.strategies.base.Strategy` it is handed and never
imports the agents nor builds a strategy by name (that is
:mod:`fincon.workflow.runner`); see docs/architecture.md."""

from fincon.engine.backtest import BacktestResult, run_backtest
from fincon.engine.broker import BrokerSettings

__all__ = ["BacktestResult", "BrokerSettings", "run_backtest"]
