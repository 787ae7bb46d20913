"""Strategies: the decision interface and the classical baselines.

Its names load on first use (:mod:`fincon.lazy`, PEP 562): importing the
package costs nothing until a name is used.
"""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.strategies import state as state
    from fincon.strategies.base import (
        Decision as Decision,
    )
    from fincon.strategies.base import (
        RunContext as RunContext,
    )
    from fincon.strategies.base import (
        StopRun as StopRun,
    )
    from fincon.strategies.base import (
        Strategy as Strategy,
    )
    from fincon.strategies.registry import make_strategy as make_strategy
    from fincon.strategies.registry import strategy_names as strategy_names
    from fincon.strategies.state import STATE_FILE as STATE_FILE

__getattr__, __dir__ = face(__name__, __file__)
