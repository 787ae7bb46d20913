"""The engine: backtrader-driven daily loop, run directories and plots."""

from fincon.engine.backtest import BacktestResult, run_backtest
from fincon.engine.broker import BrokerSettings

__all__ = ["BacktestResult", "BrokerSettings", "run_backtest"]
