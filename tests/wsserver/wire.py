"""A thin raw client for tests that need to control every frame."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from protocol.audio_frame import audio_event_from_frame, is_audio_frame
from protocol.encoding import JSON_SUBPROTOCOL, codec_for


class RawClient:
    """One connection, JSON or msgpack, with helpers to send and wait for messages."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.codec = codec_for(ws.subprotocol)
        self.seen: list[dict[str, Any]] = []

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        subprotocol: str | None = JSON_SUBPROTOCOL,
        rcvbuf: int | None = None,
        **kwargs: Any,
    ) -> RawClient:
        sock = None
        if rcvbuf is not None:
            # A tiny receive buffer makes a non-reading client push back on the server fast.
            host, port = url.removeprefix("ws://").split(":")
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.connect((host, int(port)))
            sock.setblocking(False)
            kwargs["max_queue"] = 1
        ws = await connect(
            url,
            subprotocols=[Subprotocol(subprotocol)] if subprotocol else None,
            compression=None,
            sock=sock,
            **kwargs,
        )
        return cls(ws)

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(self.codec.encode(message))

    async def send_raw(self, frame: str | bytes) -> None:
        await self.ws.send(frame)

    async def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        frame = await asyncio.wait_for(self.ws.recv(), timeout)
        message: dict[str, Any]
        if isinstance(frame, bytes) and is_audio_frame(frame):
            message = audio_event_from_frame(frame)
        else:
            message = self.codec.decode(frame)
        self.seen.append(message)
        return message

    async def until(self, msg_type: str, timeout: float = 10.0) -> dict[str, Any]:
        """Read until a message of ``msg_type`` arrives; returns it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            message = await self.recv(max(0.01, deadline - loop.time()))
            if message.get("type") == msg_type:
                return message

    async def resume(self, ready: dict[str, Any], last_seq: int) -> None:
        """Send ``session.resume`` for the session a ``session.ready`` described."""
        await self.send(
            {
                "type": "session.resume",
                "session_id": ready["session_id"],
                "resume_token": ready["resume_token"],
                "last_seq": last_seq,
            }
        )

    async def start(self, **fields: Any) -> dict[str, Any]:
        await self.send({"type": "session.start", **fields})
        return await self.until("session.ready")

    async def close(self) -> None:
        await self.ws.close()

    def abort(self) -> None:
        """Cut the TCP connection without a close frame."""
        self.ws.transport.abort()

    async def closed_code(self, timeout: float = 10.0) -> int | None:
        """Read until the server closes; the close code it sent."""
        try:
            while True:
                await asyncio.wait_for(self.ws.recv(), timeout)
        except ConnectionClosed as exc:
            return exc.rcvd.code if exc.rcvd is not None else None


def text_of(messages: list[dict[str, Any]]) -> str:
    """Concatenated text deltas."""
    return "".join(m["delta"] for m in messages if m.get("type") == "response.text.delta")


def dumps(message: dict[str, Any]) -> str:
    return json.dumps(message)


async def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``condition`` until it holds; fail after ``timeout`` (a bound, not a measurement)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)
