"""The Python client SDK: sessions that resume, tools, voice (imports nothing of the worker)."""

from __future__ import annotations

from wsserver.client.backoff import Backoff
from wsserver.client.errors import AuthenticationError, ClientError, SessionClosed
from wsserver.client.results import ResponseResult
from wsserver.client.session_client import SessionClient

__all__ = [
    "AuthenticationError",
    "Backoff",
    "ClientError",
    "ResponseResult",
    "SessionClient",
    "SessionClosed",
]
