"""The team's roles, one module each, with their prompt templates beside them.

``ANALYSTS`` lists the per-ticker analysts in the order they report;
stock selection is separate (it runs once over the candidates, not per
ticker).
"""

from __future__ import annotations

from fincon.agents.roles import (
    analyst_notes,
    annual_report,
    data_analysis,
    earnings_call,
    news,
    quarterly_report,
    stock_selection,
    trader,
)
from fincon.agents.roles.base import EventRole, Item, Profile, Role, RoleInputs

ANALYSTS: dict[str, Role] = {
    m.ROLE.name: m.ROLE for m in (news, quarterly_report, annual_report, analyst_notes, earnings_call, data_analysis)
}
STOCK_SELECTION = stock_selection.ROLE
#: agents that trade alone (``finmem``), not among the team's analysts
SINGLE: dict[str, Role] = {trader.ROLE.name: trader.ROLE}
#: every role an analysts list may name
ROLES: dict[str, Role] = {**ANALYSTS, **SINGLE}

__all__ = ["ANALYSTS", "ROLES", "SINGLE", "STOCK_SELECTION", "EventRole", "Item", "Profile", "Role", "RoleInputs"]
