"""How the SDK opens one connection: its URL, its handshake options, what a refusal means.

Every connection of a session, the reconnects and the one that ends a session between
connections, is opened with the same options: the encoding and credentials in the
handshake, TLS for ``wss://``, no compression, and a logger that never shows a secret.
"""

from __future__ import annotations

import contextlib
import logging
import ssl as ssl_module
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import InvalidStatus

from wsserver.client.auth import Credentials, RedactingLogger, retry_after_seconds

ABNORMAL_CLOSE = 1006
"""The code of a connection that ended without a closing handshake."""


class Handshake:
    """The handshake options every connection of one client uses."""

    def __init__(
        self,
        subprotocol: str,
        credentials: Credentials,
        *,
        ssl: ssl_module.SSLContext | None,
        open_timeout: float,
        close_timeout: float,
        resume_token: Callable[[], str | None],
    ) -> None:
        """``resume_token``: the session's, read at each log line (it must not show)."""
        self.subprotocol = subprotocol
        self.credentials = credentials
        self.ssl = ssl
        """TLS context for wss:// URLs (None: the system's CAs)."""
        self.open_timeout = open_timeout
        self.close_timeout = close_timeout
        self._resume_token = resume_token
        self.logger = RedactingLogger(logging.getLogger("websockets.client"), self.secrets)

    def secrets(self) -> tuple[str, ...]:
        """What the connection's debug log must not show."""
        token = self._resume_token()
        return (*self.credentials.secrets(), *((token,) if token else ()))

    def options(self, url: str) -> dict[str, Any]:
        """Keyword arguments of ``connect``: credentials, TLS, no compression, timeouts."""
        tls: dict[str, Any] = {"ssl": self.ssl} if url.startswith("wss://") and self.ssl else {}
        return {
            **tls,
            "subprotocols": self.credentials.subprotocols(self.subprotocol),
            "additional_headers": self.credentials.headers(),
            "compression": None,
            "open_timeout": self.open_timeout,
            "close_timeout": self.close_timeout,
            "max_size": None,
            "logger": self.logger,
        }


def session_url(url: str, session_id: str | None) -> str:
    """The URL to connect to; a resume names its session, so a router finds its owner."""
    if session_id is None:
        return url
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}session_id={session_id}"


def close_code_of(ws: ClientConnection | None) -> int | None:
    """The code a connection was closed with (None: it never opened)."""
    if ws is None:
        return None
    with contextlib.suppress(AttributeError):
        received = ws.protocol.close_rcvd
        if received is not None:
            return int(received.code)
    return ABNORMAL_CLOSE


@dataclass(frozen=True, slots=True)
class Refusal:
    """What an HTTP refusal of the upgrade means for the next attempt."""

    credentials_refused: str | None = None
    """Why the credentials were refused (HTTP 401/403): retrying cannot help."""
    retry_after: float | None = None
    """Seconds before the next attempt (HTTP 429/503 with ``Retry-After``)."""


def refusal(exc: InvalidStatus) -> Refusal:
    """Read an HTTP refusal of the upgrade: credentials (terminal) or busy (retry later)."""
    status = exc.response.status_code
    if status in (401, 403):
        # The message shows no secret.
        return Refusal(credentials_refused=f"handshake refused: http {status}")
    if status in (429, 503):
        return Refusal(retry_after=retry_after_seconds(exc.response.headers.get("Retry-After")))
    return Refusal()
