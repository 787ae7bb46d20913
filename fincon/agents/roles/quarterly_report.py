"""10-Q analyst: the latest quarterly MD&A (revenue, margins, liquidity).

Quarterly reports stay relevant for weeks (half-life ~34 days), so its
inputs rarely change between filings and most days reuse yesterday's report
without a model call.
"""

from __future__ import annotations

from fincon.agents.roles.base import HERE, EventRole, Profile


class QuarterlyReportAnalyst(EventRole):
    name = "10-q"
    sources = ("10-Q",)
    weight = 0.10
    template = HERE / "filing.txt"
    profile = Profile(
        role="10-Q analyst of an equity trading team",
        responsibilities="read the management discussion of the company's quarterly reports: revenue growth, operating margin, cash and risks.",
        target="tell the manager whether the latest quarter supports a bullish, bearish or neutral view, citing the filings.",
    )


ROLE = QuarterlyReportAnalyst()
