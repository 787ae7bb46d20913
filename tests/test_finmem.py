"""``finmem``: a FinMem-style single agent (issue 33 item 2) on the team's
own machinery: one trader reads every source, reflects every day, and its
view is the decision; the paper's single-agent comparison as an ablation."""

from __future__ import annotations

import pandas as pd
import pytest

from fincon.agents.finmem import FinMem, FinMemParams
from fincon.errors import ConfigError
from fincon.strategies import make_strategy
from fincon.testing import RULES, backtest, market_for, stub_client

START, END = pd.Timestamp("2022-10-05"), pd.Timestamp("2022-11-15")
ACTION = {"bullish": "buy", "bearish": "sell", "neutral": "hold"}


def _run(tmp_path, **kw):
    strategy = FinMem(FinMemParams(**{**RULES, **kw.pop("params", {})}), **kw)
    market = market_for(["TSLA"], warmup=strategy.warmup, start=START, end=END)
    return backtest(market, strategy, tmp_path), strategy


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_one_trader_decides_alone_and_reflects_every_day(tmp_path):
    res, _ = _run(tmp_path)
    held = 0.0
    for i, d in enumerate(res.decisions):
        rec = d["record"]
        assert [a["agent"] for a in rec["agents"]] == ["trader/TSLA"]  # one agent, no analysts
        assert rec["manager"]["via"] == "single" and rec["manager"]["calls"] == 0  # no manager call
        want = ACTION[rec["agents"][0]["direction"]]
        if (want == "buy" and held > 0) or (want == "sell" and held < 0):
            want = "hold"  # the side already held: kept, no re-sizing trade
        assert d["actions"]["TSLA"] == want
        held = {"buy": 1.0, "sell": -1.0}.get(want, held)
        if i > 0:  # every settled day is a reflection, not only the losing ones
            assert rec["settled"]["reflection"]
    assert res.strategy == "finmem"


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_with_a_model_one_call_a_day_reads_its_own_reflections(tmp_path):
    client, stub = stub_client()
    res, strategy = _run(tmp_path, params={"brain": "llm"}, client=client)
    days = len(res.decisions)
    # the trader's call each day (or its reuse) and one reflection a settled day: no analysts, no manager
    assert stub.calls <= 2 * days
    prompts = [r["inputs"] for d in res.decisions for r in d["record"]["agents"]]
    assert prompts and all(len(p) <= strategy.params.memory_k for p in prompts)
    reflections = [d["record"]["settled"].get("reflection") for d in res.decisions[1:]]
    assert all(reflections)
    # what the trader reads after the run: its own latest reflections in its prompt
    from fincon.agents.roles import SINGLE
    from fincon.data.inputs import open_events

    market = market_for(["TSLA"], start=START, end=END).with_events(open_events("sample", ["TSLA"]))
    inputs = strategy._gather(SINGLE["trader"], "TSLA", market.view_at(len(market) - 1))
    prompt = SINGLE["trader"].messages(inputs)[1]["content"]
    assert "Your reflections on past decisions:" in prompt and reflections[-1][:40] in prompt


def test_finmem_is_one_trader_by_construction():
    assert isinstance(make_strategy("finmem", {"brain": "rules"}), FinMem)
    with pytest.raises(ConfigError, match="finmem is one trader"):
        make_strategy("finmem", {"analysts": ["news"]})
    with pytest.raises(ConfigError, match="finmem decides alone"):
        make_strategy("finmem", {"protocol": "fincon"})
