"""The session and response a log line concerns, carried in context variables.

Set where a session's work runs (the connection's reader once the session is
bound, around an engine request's start), so every log call made there, ours or
a library's, carries the ids without passing them.
"""

from __future__ import annotations

from contextvars import Context, ContextVar, copy_context

SESSION_ID: ContextVar[str | None] = ContextVar("wsserver_session_id", default=None)
RESPONSE_ID: ContextVar[str | None] = ContextVar("wsserver_response_id", default=None)


def bind_session(session_id: str) -> None:
    """From now on in this task (and the tasks it starts), lines concern ``session_id``."""
    SESSION_ID.set(session_id)


def response_context(session_id: str, response_id: str) -> Context:
    """A copy of the current context naming the response: ``.run(f)`` runs ``f`` in it.

    What ``f`` starts (an engine request's tasks) keeps the ids; the caller's own
    context is left as it was.
    """
    context = copy_context()
    context.run(_set_ids, session_id, response_id)
    return context


def _set_ids(session_id: str, response_id: str) -> None:
    SESSION_ID.set(session_id)
    RESPONSE_ID.set(response_id)
