"""Numeric critics (issue 10, item 4): the numbers an analyst states about a
filing or a call are checked by a data-extraction critic (were the right
figures taken from the source?) and then a calculation critic (is the
arithmetic right?); a failed claim is corrected or dropped, and counted.

* :mod:`.claims`   figures in a text (regex), the metrics and their formulas
* :mod:`.critics`  the two critics as brain questions (rules: deterministic checks)
* :mod:`.review`   :class:`NumericCritics`, the team's hook (``--critics on``)

See docs/protocols.md, "Numeric critics"; ``fincon eval numeric`` scores them.
"""

from fincon.agents.critics.claims import METRICS, Claim, Figure, claims_in, figures_in, format_value
from fincon.agents.critics.critics import STAGES, Review, critique
from fincon.agents.critics.review import ROLES, NumericCritics, rewrite

__all__ = [
    "METRICS",
    "Claim",
    "Figure",
    "claims_in",
    "figures_in",
    "format_value",
    "STAGES",
    "Review",
    "critique",
    "ROLES",
    "NumericCritics",
    "rewrite",
]
