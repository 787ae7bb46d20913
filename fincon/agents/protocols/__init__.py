"""Decision protocols: analyst reports in, one ``Decision`` out.

A protocol is the pluggable decision step of the team. ``fincon`` is the
paper's manager; later protocols (e.g. a debate or a supply-chain manager)
add a module here and an entry in :data:`PROTOCOLS`.
"""

from __future__ import annotations

PROTOCOLS = ("fincon",)


def make_protocol(name: str, **kw):
    if name == "fincon":
        from fincon.agents.protocols.fincon import FinConManager

        return FinConManager(**kw)
    raise ValueError(f"unknown protocol {name!r}; use one of {', '.join(PROTOCOLS)}")
