"""Plain types of the client SDK: errors, results, reconnect backoff."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any


class ClientError(Exception):
    """Base class of SDK errors."""


class SessionClosed(ClientError):
    """The session ended for good (terminal close code, failed resume, or close())."""


class AuthenticationError(SessionClosed):
    """The server refused the credentials (HTTP 401/403 or an auth close code); never retried.

    A :class:`SessionClosed` too: the session cannot go on with these credentials.
    """


@dataclass(slots=True)
class ResponseResult:
    """A finished (or truncated) response."""

    response_id: str
    text: str
    status: str
    reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    """Every event of the response except audio chunks (those are in ``audio``)."""
    audio: bytes = b""
    """The response's audio (PCM16 at the session's rate), when it had any."""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """The ``response.tool_call`` events of the response."""
    output_json: Any = None
    """The final structured output (``response.output_json.done``), when asked for."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Jittered exponential backoff between reconnect attempts ("full jitter")."""

    base: float = 0.1
    cap: float = 5.0
    max_attempts: int = 12

    def delay(self, attempt: int) -> float:
        """Seconds to wait before reconnect attempt ``attempt`` (0-based)."""
        return random.uniform(0, min(self.cap, self.base * (2**attempt)))
