"""Strategy factory: a name and a params mapping in, a strategy out.

Strategies are named here by module path and imported only when built, so
listing them (``fincon --help``) costs no numerical import, and the agents
(which build on :mod:`fincon.strategies.base`) never import this module
back. Each baseline class carries a pydantic ``Params`` model; unknown or
bad params are reported with the strategy's and the key's names.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping

from pydantic import ValidationError

from fincon.errors import ConfigError
from fincon.strategies.base import Strategy
from fincon.validation import format_validation_error

#: baselines: name -> "module:Class" (the class takes its Params model)
STRATEGIES: dict[str, str] = {
    "buy-and-hold": "fincon.strategies.buy_and_hold:BuyAndHold",
    "equal-weight": "fincon.strategies.equal_weight:EqualWeight",
    "markowitz": "fincon.strategies.markowitz:Markowitz",
    "sma-cross": "fincon.strategies.sma_cross:SmaCross",
}

#: strategies that talk to a model: name -> "module:factory"; the factory
#: gets (params, the run's llm section) and returns a Strategy
FACTORIES: dict[str, str] = {
    "llm-trader": "fincon.agents.simple_trader:make_llm_trader_from_run",
    "fincon": "fincon.agents.team:make_fincon_team",
}
LLM_STRATEGIES = frozenset(FACTORIES)

__all__ = [
    "STRATEGIES",
    "FACTORIES",
    "LLM_STRATEGIES",
    "format_validation_error",
    "make_strategy",
    "strategy_class",
    "strategy_names",
]


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def strategy_names() -> list[str]:
    return sorted(set(STRATEGIES) | set(FACTORIES))


def strategy_class(name: str) -> type:
    """The class of baseline ``name`` (imports its module)."""
    return _load(STRATEGIES[name])


def make_strategy(name: str, params: Mapping[str, Any] | None = None, llm: Mapping[str, Any] | None = None) -> Strategy:
    """Build strategy ``name``; ``llm`` is the run's LLM section (LLM strategies only)."""
    params = dict(params or {})
    if name in FACTORIES:
        factory: Callable[[Mapping[str, Any], Mapping[str, Any]], Strategy] = _load(FACTORIES[name])
        return factory(params, dict(llm or {}))
    if name not in STRATEGIES:
        raise ConfigError(f"unknown strategy {name!r}; choose one of {', '.join(strategy_names())}")
    cls = strategy_class(name)
    try:
        return cls(cls.Params(**params))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(f"strategy_params.{name}", exc, cls.Params)) from None
