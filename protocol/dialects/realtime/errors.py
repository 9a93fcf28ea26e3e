"""The Realtime API's ``error`` event, and the dialect's exception tree."""

from __future__ import annotations

from typing import Any

from protocol.errors import ProtocolError
from protocol.json_value import is_valid_text, safe_text

INVALID_REQUEST = "invalid_request_error"
SERVER_ERROR = "server_error"
MAX_CLIENT_EVENT_ID = 128


class DialectError(ProtocolError):
    """A Realtime client event that cannot be applied; answered with an ``error`` event."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        param: str | None = None,
        error_type: str = INVALID_REQUEST,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.param = param
        self.error_type = error_type


def client_event_id(value: object) -> str | None:
    """A client's ``event_id`` if it is safe to echo back, else ``None``."""
    if type(value) is str and len(value) <= MAX_CLIENT_EVENT_ID and is_valid_text(value):
        return value
    return None


def error_event(
    event_id: str,
    *,
    error_type: str,
    code: str | None,
    message: str,
    param: str | None = None,
    client_event_id: str | None = None,
) -> dict[str, Any]:
    """A complete Realtime ``error`` event (every field of the SDK's ``RealtimeError``)."""
    return {
        "type": "error",
        "event_id": event_id,
        "error": {
            "type": error_type,
            "code": code,
            "message": safe_text(message, 1000),
            "param": param,
            "event_id": client_event_id,
        },
    }
