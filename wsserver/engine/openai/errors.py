"""Why an upstream request failed: one exception tree, library errors translated into it."""

from __future__ import annotations

from protocol.generation import FinishReason
from wsserver.engine.base import EngineError

_MESSAGE_LIMIT = 300


class UpstreamFailure(EngineError):
    """The upstream failed this request.

    ``retryable`` says whether another attempt may succeed (only before the first
    token); ``retry_after`` is the delay the upstream asked for, if any.
    """

    finish_reason = FinishReason.UPSTREAM_ERROR

    def __init__(
        self, message: str, *, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


class UpstreamTimeout(UpstreamFailure):
    """No first token, or no next chunk, within its timeout."""

    finish_reason = FinishReason.UPSTREAM_TIMEOUT


class UpstreamProtocolError(UpstreamFailure):
    """The upstream's answer is not a chat-completions stream we can read."""


def sanitize(text: str, secret: str | None = None) -> str:
    """An upstream's message made safe to log: one line, printable, short, no secret."""
    if secret:
        text = text.replace(secret, "[redacted]")
    cleaned = "".join(ch if ch.isprintable() else " " for ch in text)
    cleaned = " ".join(cleaned.split())
    if len(cleaned) > _MESSAGE_LIMIT:
        cleaned = cleaned[:_MESSAGE_LIMIT] + "..."
    return cleaned
