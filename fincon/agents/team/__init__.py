"""The FinCon agent team, split along the seams a reader looks for:

* :mod:`.params` -- what a user configures (``strategy_params.fincon``);
* :mod:`.corpus` -- the event store the analysts read and the days it covers;
* :mod:`.strategy` -- the run lifecycle and the day (``FinConTeam.decide``);
* :mod:`.calls` -- analysts and manager answered by the brain, with reuse;
* :mod:`.learning` -- yesterday settled: reflections and memory rewards;
* :mod:`.factory` -- the registry's entry (``make_fincon_team``).

The names below load on first use (:mod:`fincon.lazy`, PEP 562): the CLI reads
:class:`FinConParams` to build its team flags, and ``fincon --help`` must not
import pandas with the corpus and the strategy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.agents.team.corpus import coverage as coverage
    from fincon.agents.team.factory import make_fincon_team as make_fincon_team
    from fincon.agents.team.learning import risk_stance as risk_stance
    from fincon.agents.team.params import FinConParams as FinConParams
    from fincon.agents.team.strategy import FinConTeam as FinConTeam

__all__ = ["FinConParams", "FinConTeam", "coverage", "make_fincon_team", "risk_stance"]

__getattr__, __dir__ = face(__name__, __file__)
