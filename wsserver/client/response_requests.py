"""Requests that start a response, sent again after a resume until the server answers.

A connection can drop between the send and the server reading it. Each request carries
an id; after the resume the one not yet answered is sent again, and the server answers
a copy it already had with ``duplicate_request`` (nothing new starts).
"""

from __future__ import annotations

from typing import Any

from websockets.asyncio.client import ClientConnection

from protocol.client_session import ClientState
from wsserver.client.errors import ClientError
from wsserver.client.reconnect import ReconnectingConnection


class ResponseRequests:
    """Numbers the requests that start a response and keeps the one not yet answered."""

    def __init__(self, connection: ReconnectingConnection) -> None:
        self._connection = connection
        self._count = 0
        self.pending: dict[str, Any] | None = None
        """The last request sent, until its ``response.created`` or ``error`` came."""

    async def send(self, message: dict[str, Any]) -> None:
        """Send a request (``response.create``, ``response.continue``); kept until answered."""
        self._count += 1
        message.setdefault("id", f"req_{self._count}")
        self.pending = message
        try:
            await self._connection.send(message)
        except ClientError:
            if self._connection.state.state is ClientState.CLOSED:
                raise
            # Dropped while sending: it goes again after the resume.

    def on_event(self, event: dict[str, Any]) -> None:
        """The pending request got its answer (started, or refused)."""
        if event.get("type") not in ("response.created", "error"):
            return
        pending = self.pending
        if pending is not None and event.get("request_id") == pending["id"]:
            self.pending = None

    async def after_ready(self, ws: ClientConnection, ready: dict[str, Any]) -> None:
        """After a resume, send the request the server may never have read."""
        if self.pending is not None and ready.get("resumed"):
            await ws.send(self._connection.codec.encode(self.pending))
