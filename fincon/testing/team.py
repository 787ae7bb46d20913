"""A FinCon team run in one call, on the rules brain and the hashing
embedder, earnings calls read as text: no model, no Whisper, no MiniLM."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from fincon.agents.team import FinConParams, FinConTeam
from fincon.testing.markets import backtest, market_for

RULES = {"brain": "rules", "embedder": "hashing", "transcripts": "text"}


def run_team(tickers, start, end, tmp: Path, market=None, client=None, settings=None, **params):
    """Backtest a ``FinConTeam`` (``RULES`` updated by ``params``; ``settings``
    its LLMSettings) over the sample prices of ``tickers`` from ``start`` to
    ``end`` (or ``market``); returns the result and the team."""
    p = FinConParams(**{**RULES, **params})
    team = FinConTeam(p, settings, client=client)
    m = (
        market
        if market is not None
        else market_for(tickers, warmup=team.warmup, start=pd.Timestamp(start), end=pd.Timestamp(end))
    )
    tmp.mkdir(parents=True, exist_ok=True)
    return backtest(m, team, tmp), team


def day_records(result, n) -> list[str]:
    """The first ``n`` decisions of a result, serialised as the engine writes
    them: equal lists mean byte-identical ``decisions.jsonl`` lines."""
    return [json.dumps(d, sort_keys=True) for d in result.decisions[:n]]
