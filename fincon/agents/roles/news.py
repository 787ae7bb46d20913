"""News analyst: reads the day's news and its recent news memories.

News fades fast in memory (A.13 half-life ~6.6 days), so what it says is
mostly about today's items; the rules brain weights items by that recency.
"""

from __future__ import annotations

from fincon.agents.roles.base import HERE, EventRole, Profile


class NewsAnalyst(EventRole):
    name = "news"
    sources = ("news",)
    weight = 0.30
    template = HERE / "news.txt"
    profile = Profile(
        role="news analyst of an equity trading team",
        responsibilities="read the company's latest news items and judge what they mean for the share price over the next days.",
        target="tell the manager whether the news flow is bullish, bearish or neutral, citing the items you rely on.",
    )


ROLE = NewsAnalyst()
