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
