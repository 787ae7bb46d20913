"""The single trader of ``--strategy finmem``: one agent reading every source.

FinMem (Yu et al., 2023) is one LLM agent with a layered memory and daily
self-reflection; the FinCon paper compares it with the manager-analyst
hierarchy given the same sources. Here it is the team's own machinery with
one agent: this role reads news, filings, analyst notes and calls from one
memory (the same per-source decay the analysts have, FinMem's layers by
another name: news short, filings long) and its own reflections, and its
view is the decision (fincon.agents.protocols.single). Not in the FinCon
team's analysts: only ``finmem`` uses it.
"""

from __future__ import annotations

from fincon.agents.roles.base import HERE, EventRole, Profile


class Trader(EventRole):
    name = "trader"
    sources = None  # every event source
    weight = 1.0
    template = HERE / "trader.txt"
    profile = Profile(
        role="trader of one stock, working alone",
        responsibilities="read the company's news, 10-Q and 10-K filings, analyst notes and earnings calls from "
        "your memory, and your own reflections on your past decisions.",
        target="say whether to hold the stock long (bullish), short (bearish) or not at all (neutral) today, "
        "citing the items you rely on.",
    )


ROLE = Trader()
