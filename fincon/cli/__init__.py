"""Command-line interface. Each sub-command lives in its own module, says
what it is (``COMMAND``, ``SUMMARY``, ``HELP``, ``EXAMPLES``) and exposes
``register(parser)``; :mod:`fincon.cli.main` makes the parsers, building
only the command a command line names.
"""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.cli.backtest import (
        add_plan_flags as add_plan_flags,
        build_config as build_config,
        run_and_report as run_and_report,
    )
    from fincon.cli.options import as_typed as as_typed

__getattr__, __dir__ = face(__name__, __file__)
