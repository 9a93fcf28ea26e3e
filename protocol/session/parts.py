"""The parts of a session's state that its history and tool-round helpers work on.

``history`` and ``tool_rounds`` are functions over these parts;
:class:`protocol.session.state.ServerSession` has them and calls those functions,
so they type against this interface instead of importing the state (one way).
"""

from __future__ import annotations

from typing import Protocol

from protocol.conversation import Conversation
from protocol.outbox import Outbox
from protocol.session.responses import ResponseState, SessionLimits
from protocol.tool_loop import ToolLoop
from protocol.usage import Usage


class SessionParts(Protocol):
    """A session's conversation, tools, outbox, usage and its latest responses."""

    limits: SessionLimits
    conversation: Conversation
    tools: ToolLoop
    outbox: Outbox
    usage: Usage
    active: ResponseState | None
    """The running response, if any."""
    last_response: ResponseState | None
    """The latest response that ended."""
