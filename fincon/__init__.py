"""fincon: backtest and simulate trading by teams of LLM agents.

The package is split into rooms that mirror the FinCon design:

* ``fincon.data``       - point-in-time market data (and, later, text events)
* ``fincon.workflow``   - runs, belief training, experiments and their executors
* ``fincon.engine``     - the backtrader-driven daily loop, run directories, plots
* ``fincon.strategies`` - classical strategies and the decision interface agents use
* ``fincon.risk``       - metrics (CR, Sharpe, MDD, VaR/CVaR) and the optimizer
* ``fincon.agents``, ``fincon.memory``, ``fincon.llm`` - the agent team

The layers, and what each room may import: docs/architecture.md.
"""

__version__ = "0.1.0"
