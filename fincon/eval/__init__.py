"""Evaluations behind ``fincon eval``: each module builds a labelled set,
runs the team's parts on it and returns a table (``run``, then ``report``
for its text). Plain functions: :mod:`fincon.cli.eval` builds the parsers
and the model client.
"""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.eval import (
        debate as debate,
        debate_filings as debate_filings,
        extraction as extraction,
        finqa as finqa,
        lookahead as lookahead,
        numeric as numeric,
    )

__getattr__, __dir__ = face(__name__, __file__)
