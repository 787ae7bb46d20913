"""The workflow room: what runs the engine's daily loop for a purpose.

* :mod:`fincon.workflow.runner`: a validated run config to run directories
  (builds each strategy by name, the agent team included, and runs the loop);
* :mod:`fincon.workflow.training`: CVRF belief training (``fincon train``);
* :mod:`fincon.workflow.experiment`: the experiment grid (``fincon experiment``), with its
  config model (``experiment_config``), units (``experiment_units``) and results
  (``experiment_results``);
* :mod:`fincon.workflow.executors`: how an experiment runs its units (serial
  or Ray tasks).

It sits between the engine (the loop and the run directory, which never
imports the agents) and the CLI; see docs/architecture.md.
"""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.workflow import (
        experiment_stats as experiment_stats,
        forward as forward,
        forward_anchor as forward_anchor,
        forward_attempts as forward_attempts,
        forward_clock as forward_clock,
        forward_code as forward_code,
        forward_score as forward_score,
        paper_protocol as paper_protocol,
        rolling as rolling,
        rolling_stats as rolling_stats,
        trials as trials,
    )
    from fincon.workflow.experiment import (
        load_experiment as load_experiment,
        read_yaml as read_yaml,
        run_experiment as run_experiment,
        serial as serial,
    )
    from fincon.workflow.experiment_config import (
        ExperimentConfig as ExperimentConfig,
        RollingSpec as RollingSpec,
        Window as Window,
    )
    from fincon.workflow.model_checks import warn_vacuous as warn_vacuous
    from fincon.workflow.paper_protocol import plan as plan, run_paper as run_paper
    from fincon.workflow.presets import NOTES as NOTES, preset_overrides as preset_overrides
    from fincon.workflow.process_pool import ProcessPool as ProcessPool
    from fincon.workflow.ray_executor import RayExecutor as RayExecutor
    from fincon.workflow.rolling import run_rolling as run_rolling
    from fincon.workflow.rolling_stats import window_returns as window_returns
    from fincon.workflow.runner import (
        BENCHMARK as BENCHMARK,
        chart_title as chart_title,
        inputs_for as inputs_for,
        preflight as preflight,
        run_config as run_config,
        with_events as with_events,
    )
    from fincon.workflow.status import (
        KEPT as KEPT,
        RESUMABLE as RESUMABLE,
        an as an,
        failure as failure,
        read_state as read_state,
        unfinished as unfinished,
    )
    from fincon.workflow.training import TrainOptions as TrainOptions, train as train
    from fincon.workflow.trials import resolve as resolve
    from fincon.workflow.universe import parse_rule as parse_rule

__getattr__, __dir__ = face(__name__, __file__)
