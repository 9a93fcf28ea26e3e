"""The exception tree of the ``protocol`` package."""

from __future__ import annotations

from typing import Any

from protocol.codes import ErrorCode


class ProtocolError(Exception):
    """Base class of every error raised by ``protocol``."""


class ProtocolViolation(ProtocolError):
    """A peer sent something the protocol does not allow; answered in-band."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        request_id: str | None = None,
        *,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.details = details
        """Extra fields for the ``error`` event (a session snapshot, for example)."""


class ResumeRefused(ProtocolViolation):
    """A resume request that cannot be honoured (unknown session, bad token, gap)."""
