"""Decision protocols: the pluggable step between the analysts' reports and
the day's ``Decision`` (``--protocol``, ``strategy_params.fincon.protocol``).

A protocol is one module here with its prompts beside it, registered in
:data:`PROTOCOLS` (name -> ``module:Class``, imported only when used). The
class is built with the team's params (``Class(params)``) and provides:

* ``agent``: its name in the ledger and the episodic memory ("manager");
* ``sampling``: None, or the manager's own sampling params (training);
* ``bind(team)``: called once at the run's start, after the team has opened
  its memory store and event store (a protocol that retrieves from them, e.g.
  the debate over call transcripts, keeps what it needs);
* ``decide(brain, task, view, universe) -> (Decision, Answer, record)``:
  every model call goes through ``brain.answer(Question)`` (each Question
  carries its deterministic rules answer, so the protocol works with both
  brains and falls back, counted). ``brain`` may be a
  :class:`~fincon.agents.brains.Reuse` holding the protocol's previous final
  report (the team's inputs hashed the same): answer with it, no call;
* ``summary() -> dict``: the protocol's own per-run measures, merged into
  ``summary.json`` (may be empty);
* optional ``digest(task, view)``: anything besides the reports, the stance
  and the beliefs its decision depends on (JSON-able); the team adds it to
  the hash that decides whether yesterday's decision can be reused.

The team applies the run's policies (:mod:`fincon.agents.policies`) to every
protocol's decision in code, after the protocol.
"""

from __future__ import annotations

import importlib
from typing import Any

#: name -> "module:Class"
PROTOCOLS: dict[str, str] = {
    "fincon": "fincon.agents.protocols.fincon:FinConManager",
    "scm": "fincon.agents.protocols.scm:ScmProtocol",
    "debate": "fincon.agents.protocols.debate:DebateProtocol",
    "single": "fincon.agents.protocols.single:SingleAgent",
}


def protocol_names() -> list[str]:
    return sorted(PROTOCOLS)


def make_protocol(name: str, params: Any = None, **kw):
    """The protocol ``name``, built from the team's params (or keywords)."""
    if name not in PROTOCOLS:
        raise ValueError(f"unknown protocol {name!r}; use one of {', '.join(protocol_names())}")
    module, _, cls = PROTOCOLS[name].partition(":")
    klass = getattr(importlib.import_module(module), cls)
    if params is not None and hasattr(klass, "from_params"):
        return klass.from_params(params)
    if params is not None:
        kw = {"lookback": params.lookback, **kw}
    return klass(**kw)
