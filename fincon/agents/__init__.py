""" """

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.agents.protocols.debate import DebateProtocol as DebateProtocol
    from fincon.agents.replayed_prompts import Replayed as Replayed
    from fincon.agents.replayed_sessions import audit_run as audit_run
    from fincon.agents.roles import ROLES as ROLES

__getattr__, __dir__ = face(__name__, __file__)
