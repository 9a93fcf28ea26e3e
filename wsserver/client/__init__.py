"""The Python client SDK: sessions that resume, tools, voice (imports nothing of the worker)."""

from __future__ import annotations

from wsserver.client.results import (
    AuthenticationError,
    Backoff,
    ClientError,
    ResponseResult,
    SessionClosed,
)
from wsserver.client.session_client import SessionClient

__all__ = [
    "AuthenticationError",
    "Backoff",
    "ClientError",
    "ResponseResult",
    "SessionClient",
    "SessionClosed",
]
