"""Strategy factory: a name and a params mapping in, a strategy out.

Each strategy class carries a pydantic ``Params`` model; unknown or bad
params are reported with the strategy's and the key's names.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from pydantic import ValidationError

from fincon.errors import ConfigError
from fincon.strategies.base import Strategy
from fincon.strategies.buy_and_hold import BuyAndHold
from fincon.strategies.equal_weight import EqualWeight
from fincon.strategies.markowitz import Markowitz
from fincon.strategies.sma_cross import SmaCross

STRATEGIES: dict[str, type] = {
    cls.name: cls for cls in (BuyAndHold, EqualWeight, Markowitz, SmaCross)
}



def _llm_trader(params: Mapping[str, Any], llm: Mapping[str, Any]) -> Strategy:
    # imported lazily: the agent imports fincon.strategies.base (a cycle at
    # import time) and pulls in the LLM layer, which baselines never need
    from fincon.agents.simple_trader import make_llm_trader

    return make_llm_trader({**llm, **params})


# Strategies that talk to a model get the run's ``llm`` settings as well as
# their own params; strategy params win where both set a key.
FACTORIES: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Strategy]] = {
    "llm-trader": _llm_trader,
}
LLM_STRATEGIES = frozenset(FACTORIES)


def strategy_names() -> list[str]:
    return sorted(set(STRATEGIES) | set(FACTORIES))


def format_validation_error(prefix: str, exc: ValidationError) -> str:
    """One line naming every bad key: 'prefix.key: message; ...'."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        key = ".".join(x for x in (prefix, loc) if x)
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown key {key!r}")
        elif key:
            parts.append(f"{key}: {msg}")
        else:
            parts.append(msg)
    return "; ".join(parts)


def make_strategy(
    name: str, params: Mapping[str, Any] | None = None, llm: Mapping[str, Any] | None = None
) -> Strategy:
    """Build strategy ``name``; ``llm`` is the run's LLM section (LLM strategies only)."""
    params = dict(params or {})
    if name in FACTORIES:
        return FACTORIES[name](params, dict(llm or {}))
    cls = STRATEGIES.get(name)
    if cls is None:
        raise ConfigError(f"unknown strategy {name!r}; choose one of {', '.join(strategy_names())}")
    try:
        return cls(cls.Params(**params))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(f"strategy_params.{name}", exc)) from None
