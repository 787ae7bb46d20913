"""The engine: backtrader-driven daily loop, run directories and plots.

It runs any :class:`~fincon.strategies.base.Strategy` it is handed and never
imports the agents nor builds a strategy by name (that is
:mod:`fincon.workflow.runner`); see docs/architecture.md.

Its names load on first use (:mod:`fincon.lazy`, PEP 562): the config
imports the cost models (:mod:`fincon.engine.costs`) while ``fincon --help``
is built, which must not import pandas or backtrader.
"""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.engine.backtest import BacktestResult as BacktestResult, run_backtest as run_backtest
    from fincon.engine.broker import BrokerSettings as BrokerSettings
    from fincon.engine.plotting import (
        alert_days as alert_days,
        plot_beliefs as plot_beliefs,
        plot_equity as plot_equity,
    )
    from fincon.engine.record import (
        DECISIONS as DECISIONS,
        RunRecord as RunRecord,
        is_run as is_run,
        member_run as member_run,
        read_json as read_json,
        read_jsonl as read_jsonl,
        run_status as run_status,
        team_day as team_day,
    )
    from fincon.engine.resume import Resume as Resume
    from fincon.engine.rundir import check_out_path as check_out_path, staging_name as staging_name

__getattr__, __dir__ = face(__name__, __file__)
