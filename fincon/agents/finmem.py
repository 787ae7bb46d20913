"""``finmem``: a FinMem-style single agent, the FinCon paper's comparison.

One agent reads every source the team reads (news, filings, analyst notes,
calls) from one memory with per-source decay (FinMem's layers: news fades in
days, filings in months) and its own daily reflections, and its view is the
day's decision (fincon.agents.protocols.single): the same LLM client, cache,
budget, fallbacks, memory store and ``decisions.jsonl`` as the team, so the
paper's claim (the hierarchy beats one agent given the same sources and
model) is an ablation here. A rules brain runs it offline.

What it takes from FinMem: one agent, layered memory read by recency,
relevance and importance, daily self-reflection written to memory and read
back. Where it differs: the layers are fincon's per-source decay rather
than FinMem's short/middle/long/reflection queues with promotion between
them, and the agent answers bullish/bearish/neutral (long, short, out)
rather than buy/sell/hold of a share count.
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

from pydantic import field_validator

from fincon.agents.team.factory import TEAM_LLM
from fincon.agents.team.params import FinConParams
from fincon.agents.team.strategy import FinConTeam
from fincon.llm.settings import layered
from fincon.validation import validated


class FinMemParams(FinConParams):
    """``strategy_params.finmem``: the team's settings (brain, events, memory,
    llm...), one trader deciding alone, no CVaR alert (FinMem has none)."""

    analysts: list[str] | None = ["trader"]
    one_trader: ClassVar[bool] = True
    protocol: str = "single"
    cvar: bool = False

    @field_validator("analysts")
    @classmethod
    def _one_trader(cls, v):
        if v != ["trader"]:
            raise ValueError("finmem is one trader: leave strategy_params.finmem.analysts out")
        return v

    @field_validator("protocol")
    @classmethod
    def _single(cls, v):
        if v != "single":
            raise ValueError("finmem decides alone (protocol single): leave strategy_params.finmem.protocol out")
        return v


class FinMem(FinConTeam):
    name = "finmem"
    Params = FinMemParams


def make_finmem(params: FinMemParams | Mapping[str, Any], llm=None) -> FinMem:
    """Registry entry: params validated, the run's typed LLM settings under the params' own."""

    p = validated(FinMemParams, params, "strategy_params.finmem")
    settings = None
    if p.brain == "llm":
        settings = layered(llm, TEAM_LLM, p.llm, "strategy_params.finmem.llm")
    return FinMem(p, settings)
