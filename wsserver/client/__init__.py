"""The Python client SDK: sessions that resume, tools, voice (imports nothing of the worker)."""

from wsserver.client.results import AuthenticationError, ClientError, ResponseResult, SessionClosed
from wsserver.client.session_client import SessionClient

__all__ = [
    "AuthenticationError",
    "ClientError",
    "ResponseResult",
    "SessionClient",
    "SessionClosed",
]
