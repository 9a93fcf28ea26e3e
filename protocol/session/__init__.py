"""The session core: one session's state and decisions, inputs in and frozen effects out.

``state`` holds what a session is (numbering, replay, responses, history,
usage), ``core`` dispatches every input through one table to the handlers of
``responding``, ``tool_policy``, ``turn_taking`` and ``session_policy``, and
``lifecycle`` is the table of a response's phases. Nothing here does I/O or
reads the clock.
"""

from protocol.session.core import SessionCore
from protocol.session.core_settings import CoreSettings
from protocol.session.lifecycle import Phase, Trigger
from protocol.session.responses import ResponseState, ResponseStatus, SessionLimits
from protocol.session.state import ServerSession

__all__ = [
    "CoreSettings",
    "Phase",
    "ResponseState",
    "ResponseStatus",
    "ServerSession",
    "SessionCore",
    "SessionLimits",
    "Trigger",
]
