"""The Realtime events a connection gets that translate no session event.

``session.created`` and ``conversation.created`` open a connection's session;
``rate_limits.updated`` follows each ``response.done``. None is replayed: each
carries a connection event id (:meth:`DialectState.next_connection_event_id`).
"""

from __future__ import annotations

from typing import Any

from protocol.dialects.realtime.session_config import session_object
from protocol.dialects.realtime.state import DialectState

RealtimeEvent = dict[str, Any]


def session_created(state: DialectState, resume_token: str) -> RealtimeEvent:
    """The ``session.created`` a new connection gets first (not a replayed event).

    ``resume`` is this server's extension: what a client sends back in headers to
    resume the session after a dropped connection (docs/REALTIME.md). The SDK keeps
    unknown fields, so an application reads it as ``event.resume``.
    """
    return {
        "type": "session.created",
        "event_id": state.next_connection_event_id(),
        "session": session_object(state.config),
        "resume": {"session_id": state.config.session_id, "resume_token": resume_token},
    }


def conversation_created(state: DialectState) -> RealtimeEvent:
    """The ``conversation.created`` that follows ``session.created`` (one per session)."""
    return {
        "type": "conversation.created",
        "event_id": state.next_connection_event_id(),
        "conversation": {
            "id": f"conv_{state.config.session_id}",
            "object": "realtime.conversation",
        },
    }


def rate_limits_updated(state: DialectState, limits: list[dict[str, Any]]) -> RealtimeEvent:
    """``rate_limits.updated`` (after each ``response.done``; not a replayed event).

    ``limits`` are ``{name, limit, remaining, reset_seconds}``: what is left of the
    principal's quotas, or none when it has none.
    """
    return {
        "type": "rate_limits.updated",
        "event_id": state.next_connection_event_id(),
        "rate_limits": [
            {
                "name": limit["name"],
                "limit": limit["limit"],
                "remaining": limit["remaining"],
                "reset_seconds": limit["reset_seconds"],
            }
            for limit in limits
        ],
    }
