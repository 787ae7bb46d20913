"""Risk: performance metrics (FinCon A.10) and the mean-variance optimizer."""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.risk import significance as significance

__getattr__, __dir__ = face(__name__, __file__)
