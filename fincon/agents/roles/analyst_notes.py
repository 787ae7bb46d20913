"""Analyst-notes analyst: ratings, price targets and the reasons given by
sell-side desks (about weekly; half-life ~13.5 days)."""

from __future__ import annotations

from fincon.agents.roles.base import HERE, EventRole, Profile


class AnalystNotesAnalyst(EventRole):
    name = "analyst-notes"
    sources = ("analyst_note",)
    weight = 0.15
    template = HERE / "analyst_notes.txt"
    profile = Profile(
        role="analyst-notes reader of an equity trading team",
        responsibilities="read research notes on the company: ratings, price targets against the last close, and the risks they name.",
        target="tell the manager whether the notes lean bullish, bearish or neutral, citing the notes.",
    )


ROLE = AnalystNotesAnalyst()
