"""The FinCon agent team, split along the seams a reader looks for:

* :mod:`.params` -- what a user configures (``strategy_params.fincon``);
* :mod:`.corpus` -- the event store the analysts read and the days it covers;
* :mod:`.strategy` -- the run lifecycle and the day (``FinConTeam.decide``);
* :mod:`.calls` -- analysts and manager answered by the brain, with reuse;
* :mod:`.learning` -- yesterday settled: reflections and memory rewards;
* :mod:`.factory` -- the registry's entry (``make_fincon_team``).
"""

from fincon.agents.team.corpus import coverage
from fincon.agents.team.factory import make_fincon_team
from fincon.agents.team.learning import risk_stance
from fincon.agents.team.params import FinConParams
from fincon.agents.team.strategy import FinConTeam

__all__ = ["FinConParams", "FinConTeam", "coverage", "make_fincon_team", "risk_stance"]
