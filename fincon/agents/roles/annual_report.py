"""10-K analyst: the latest annual MD&A, the slowest-fading memory (half-life
~138 days); a long-horizon view of the business."""

from __future__ import annotations

from fincon.agents.roles.base import HERE, EventRole, Profile


class AnnualReportAnalyst(EventRole):
    name = "10-k"
    sources = ("10-K",)
    weight = 0.10
    template = HERE / "filing.txt"
    profile = Profile(
        role="10-K analyst of an equity trading team",
        responsibilities="read the management discussion of the company's annual reports: the year's revenue, margins, capital spending and risks.",
        target="tell the manager whether the annual picture supports a bullish, bearish or neutral view, citing the filings.",
    )


ROLE = AnnualReportAnalyst()
