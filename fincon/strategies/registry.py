"""Strategy factory: a name and a params mapping in, a strategy out.

Strategies are named here by module path and imported only when built, so
listing them (``fincon --help``) costs no numerical import, and the agents
(which build on :mod:`fincon.strategies.base`) never import this module
back. Every strategy has a pydantic params model (a baseline's ``Params``,
the team's ``FinConParams``, the LLM trader's ``LLMSettings``):
:func:`validate_params` turns a config's ``strategy_params.NAME`` mapping into
it when the config is loaded, so unknown or bad params are reported with the
strategy's and the key's names before anything runs.
"""

from __future__ import annotations

import difflib
import importlib
import re
from typing import Any, Callable, Mapping

from pydantic import BaseModel, ValidationError

from fincon import llm as fincon_llm
from fincon.errors import ConfigError
from fincon.strategies.base import Strategy
from fincon.validation import format_validation_error, validated

#: baselines: name -> "module:Class" (the class takes its Params model)
STRATEGIES: dict[str, str] = {
    "buy-and-hold": "fincon.strategies.buy_and_hold:BuyAndHold",
    "equal-weight": "fincon.strategies.equal_weight:EqualWeight",
    "markowitz": "fincon.strategies.markowitz:Markowitz",
    "sma-cross": "fincon.strategies.sma_cross:SmaCross",
    "sentiment": "fincon.strategies.sentiment:SentimentBaseline",
    "sentiment-same-day": "fincon.strategies.sentiment:SameDaySentiment",
    # the paper's DRL baselines (stable-baselines3 on a gymnasium environment over fincon's bars)
    "a2c": "fincon.strategies.rl:A2CTrader",
    "ppo": "fincon.strategies.rl:PPOTrader",
    "dqn": "fincon.strategies.rl:DQNTrader",
    # the paper's portfolio DRL baseline: FinRL's A2C allocation over the run's tickers and cash
    "finrl-a2c": "fincon.strategies.finrl:FinRLA2C",
}

#: strategies that talk to a model: name -> "module:factory"; the factory
#: gets (params, the run's llm section) and returns a Strategy
FACTORIES: dict[str, str] = {
    "llm-trader": "fincon.agents.simple_trader:make_llm_trader_from_run",
    "fincon": "fincon.agents.team:make_fincon_team",
    "finsent": "fincon.agents.finsent:make_finsent",
    "finmem": "fincon.agents.finmem:make_finmem",
}
LLM_STRATEGIES = frozenset(FACTORIES)

#: the params model of each factory-built strategy: name -> "module:Model"
FACTORY_PARAMS: dict[str, str] = {
    "llm-trader": "fincon.llm.settings:LLMSettings",
    "fincon": "fincon.agents.team.params:FinConParams",
    "finsent": "fincon.agents.finsent:FinSentParams",
    "finmem": "fincon.agents.finmem:FinMemParams",
}

__all__ = [
    "STRATEGIES",
    "FACTORIES",
    "base_name",
    "LLM_STRATEGIES",
    "format_validation_error",
    "make_strategy",
    "params_model",
    "strategy_class",
    "strategy_names",
    "validate_params",
]


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def base_name(name: str) -> str:
    """The registered strategy a run's strategy name builds: ``fincon@rules`` is
    a second ``fincon`` with its own parameters (``strategy_params.fincon@rules``),
    so one run or forward journal holds the team beside its ablations."""
    return name.partition("@")[0]


def strategy_names() -> list[str]:
    return sorted(set(STRATEGIES) | set(FACTORIES))


def strategy_class(name: str) -> type:
    """The class of baseline ``name`` (imports its module)."""
    return _load(STRATEGIES[base_name(name)])


def _known(name: str, where: str = "") -> None:
    base, at, label = name.partition("@")
    if at and not re.fullmatch(r"[A-Za-z0-9_-]+", label):
        raise ConfigError(f"{where}strategy {name!r}: after @ give a label of letters, digits, - or _ (fincon@rules)")
    if base in FACTORIES or base in STRATEGIES:
        return
    close = difflib.get_close_matches(base, strategy_names(), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(f"{where}unknown strategy {name!r}{hint}; choose one of {', '.join(strategy_names())}")


def params_model(name: str) -> type[BaseModel]:
    """The pydantic model of strategy ``name``'s parameters (imports its module)."""
    _known(name)
    if base_name(name) in FACTORIES:
        return _load(FACTORY_PARAMS[base_name(name)])
    return strategy_class(name).Params


def validate_params(name: str, params: Mapping[str, Any] | BaseModel | None) -> BaseModel:
    """``strategy_params.NAME`` as its strategy's params model: a mapping is
    validated (the keys it sets stay the model's ``model_fields_set``, so a
    saved config writes back only what was given); a model of the right type
    is kept as it is."""
    _known(name, f"strategy_params.{name}: ")
    model = params_model(name)
    if isinstance(params, model):
        return params
    if isinstance(params, BaseModel):
        params = params.model_dump(exclude_unset=True)
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise ConfigError(
            f"strategy_params.{name} must be a mapping of parameter names to values, not {type(params).__name__}"
        )
    try:
        return model.model_validate(dict(params))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(f"strategy_params.{name}", exc, model)) from None


def make_strategy(name: str, params: Mapping[str, Any] | BaseModel | None = None, llm: Any = None) -> Strategy:
    """Build strategy ``name`` from its params (a mapping or its params model);
    ``llm`` is the run's typed LLM settings (``RunConfig.llm``, an
    ``LLMSettings``; a mapping of its keys is validated into one), read by the
    strategies that call a model under their own defaults."""
    _known(name)
    typed = validate_params(name, params)
    if base_name(name) in FACTORIES:
        if llm is not None and not isinstance(llm, BaseModel):
            llm = validated(fincon_llm.LLMSettings, llm, "llm")
        factory: Callable[[BaseModel, Any], Strategy] = _load(FACTORIES[base_name(name)])
        return factory(typed, llm)
    return strategy_class(name)(typed)
