"""The registry's entry for ``fincon``: validated params and LLM settings,
nothing loaded before the run starts.
May touch: the params model and the LLM settings; never a model or data.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import ValidationError

from fincon.agents.team.params import FinConParams
from fincon.agents.team.strategy import FinConTeam
from fincon.errors import ConfigError


def make_fincon_team(params: FinConParams | Mapping[str, Any], llm: Mapping[str, Any]) -> FinConTeam:
    """Registry entry: team params (validated already when they come from a
    run config), LLM settings = the run's llm section overridden by
    ``params.llm``. Nothing is loaded before the run starts."""
    from fincon.validation import format_validation_error

    if isinstance(params, FinConParams):
        p = params
    else:
        try:
            p = FinConParams.model_validate(dict(params))
        except ValidationError as exc:
            raise ConfigError(format_validation_error("strategy_params.fincon", exc, FinConParams)) from None
    settings = None
    if p.brain == "llm":
        from fincon.llm.settings import LLMSettings

        try:
            # answers are short but structured: 320 tokens leave room for the
            # longest valid one (the layer's default cap is 200)
            # and a portfolio manager's prompt with a re-ask needs more than the
            # layer's 2048-token context (the bundled Qwen models take 32k)
            settings = LLMSettings.model_validate({"answer_max_tokens": 320, "n_ctx": 4096, **dict(llm), **p.llm})
        except ValidationError as exc:
            raise ConfigError(format_validation_error("strategy_params.fincon.llm", exc, LLMSettings)) from None
    return FinConTeam(p, settings)
