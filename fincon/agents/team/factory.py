"""The registry's entry for ``fincon``: validated params and LLM settings,
nothing loaded before the run starts.
May touch: the params model and the LLM settings; never a model or data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from fincon.agents.team.params import FinConParams
from fincon.agents.team.strategy import FinConTeam
from fincon.llm.settings import layered
from fincon.validation import validated

if TYPE_CHECKING:  # pragma: no cover
    from fincon.llm.settings import LLMSettings

#: the team's own defaults under the run's llm section: answers are short but
#: structured (320 tokens leave room for the longest valid one; the layer's
#: cap is 200), and a portfolio manager's prompt with a re-ask needs more than
#: the layer's 2048-token context (the bundled Qwen models take 32k)
TEAM_LLM = {"answer_max_tokens": 320, "n_ctx": 4096}


def make_fincon_team(params: FinConParams | Mapping[str, Any], llm: "LLMSettings | None" = None) -> FinConTeam:
    """Registry entry: team params (validated already when they come from a
    run config) and the run's typed LLM settings, under ``params.llm``.
    Nothing is loaded before the run starts."""

    p = validated(FinConParams, params, "strategy_params.fincon")
    settings = None
    if p.brain == "llm":
        settings = layered(llm, TEAM_LLM, p.llm, "strategy_params.fincon.llm")
    return FinConTeam(p, settings)
