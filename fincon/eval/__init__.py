"""Evaluations behind ``fincon eval``: each module builds a labelled set,
runs the team's parts on it and returns a table (``run``, then ``report``
for its text). Plain functions: :mod:`fincon.cli.eval` builds the parsers
and the model client.

Its names load on first use (:mod:`fincon.lazy`, PEP 562): importing the
package costs nothing until a name is used.
"""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.eval import (
        debate as debate,
    )
    from fincon.eval import (
        debate_filings as debate_filings,
    )
    from fincon.eval import (
        extraction as extraction,
    )
    from fincon.eval import (
        finqa as finqa,
    )
    from fincon.eval import (
        lookahead as lookahead,
    )
    from fincon.eval import (
        numeric as numeric,
    )

__getattr__, __dir__ = face(__name__, __file__)
