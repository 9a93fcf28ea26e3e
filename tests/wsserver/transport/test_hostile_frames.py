"""Hand-made hostile frames on a raw socket, mid-session, on both send paths.

Each one must end the connection with its documented close code (docs/PROTOCOL.md)
while a response streams, and the session must be left as that code says.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
from typing import Any

import pytest

from tests.wsserver.conftest import StartServer
from tests.wsserver.wire import wait_until
from wsserver.worker.server import WorkerServer

pytestmark = pytest.mark.both_engines

WAIT = 10.0


def frame(
    opcode: int, payload: bytes, *, fin: bool = True, rsv: int = 0, mask: bool = True
) -> bytes:
    """A client frame as RFC 6455 §5.2 lays it out (``rsv``: the three reserved bits)."""
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    length = len(payload)
    mask_bit = 0x80 if mask else 0
    if length < 126:
        head = struct.pack("!BB", first, mask_bit | length)
    elif length < 65536:
        head = struct.pack("!BBH", first, mask_bit | 126, length)
    else:
        head = struct.pack("!BBQ", first, mask_bit | 127, length)
    if not mask:
        return head + payload
    key = os.urandom(4)
    masked = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return head + key + masked


class RawSocket:
    """A WebSocket client written by hand: every byte it sends is the test's."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, server: WorkerServer) -> RawSocket:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            (
                "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
        assert head.startswith(b"HTTP/1.1 101"), head
        return cls(reader, writer)

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    def send_json(self, message: dict[str, Any]) -> None:
        self.send(frame(0x1, json.dumps(message).encode()))

    async def next_frame(self) -> tuple[int, bytes]:
        first, second = await self.reader.readexactly(2)
        assert not second & 0x80, "server frames are not masked"
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await self.reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
        return first & 0x0F, await self.reader.readexactly(length)

    async def until_type(self, kind: str) -> dict[str, Any]:
        while True:
            opcode, payload = await asyncio.wait_for(self.next_frame(), WAIT)
            if opcode == 0x1:
                message: dict[str, Any] = json.loads(payload)
                if message["type"] == kind:
                    return message

    async def close_code(self) -> int:
        """Read until the server's close frame; its code."""
        while True:
            opcode, payload = await asyncio.wait_for(self.next_frame(), WAIT)
            if opcode == 0x8:
                code: int = struct.unpack("!H", payload[:2])[0]
                return code

    def abort(self) -> None:
        self.writer.transport.abort()


TEXT = b'{"type":"ping"}'
OVERSIZE = 4096 + 1

HOSTILE: dict[str, tuple[bytes, int]] = {
    "unmasked frame": (frame(0x1, TEXT, mask=False), 1002),
    "rsv1 without an extension": (frame(0x1, TEXT, rsv=4), 1002),
    "rsv2": (frame(0x1, TEXT, rsv=2), 1002),
    "rsv3": (frame(0x1, TEXT, rsv=1), 1002),
    "unknown opcode": (frame(0x3, TEXT), 1002),
    "continuation without a start": (frame(0x0, TEXT), 1002),
    "fragmented ping": (frame(0x9, b"x", fin=False), 1002),
    "invalid utf-8 text": (frame(0x1, b'{"type":"ping","id":"\xff\xfe"}'), 1007),
    "utf-8 split invalid across fragments": (
        frame(0x1, b'{"type":"ping","id":"\xe2', fin=False) + frame(0x0, b'("}'),
        1007,
    ),
    "oversize frame": (frame(0x1, b" " * OVERSIZE), 1009),
    "oversize message in fragments": (
        frame(0x1, b" " * 3000, fin=False) + frame(0x0, b" " * 3000),
        1009,
    ),
    "close code out of range": (frame(0x8, struct.pack("!H", 999)), 1002),
}


@pytest.mark.parametrize("case", list(HOSTILE))
async def test_a_hostile_frame_mid_stream_closes_with_its_code(
    start_server: StartServer, case: str
) -> None:
    server = await start_server(
        max_frame_bytes=4096, answer_tokens=100_000, decode_rate=500.0, close_timeout=0.3
    )
    client = await RawSocket.open(server)
    try:
        client.send_json({"type": "session.start"})
        ready = await client.until_type("session.ready")
        client.send_json({"type": "response.create", "input": "stream while attacked"})
        await client.until_type("response.text.delta")
        data, code = HOSTILE[case]
        client.send(data)
        assert await client.close_code() == code
        client.send(frame(0x8, struct.pack("!H", code)))  # the closing handshake's reply

        def let_go() -> bool:
            runtime = server.sessions.get(ready["session_id"])
            return runtime is None or runtime.transport is None

        await wait_until(let_go, timeout=WAIT)
    finally:
        client.abort()


async def test_a_ping_flood_mid_stream_closes_4005(start_server: StartServer) -> None:
    server = await start_server(max_pings_per_second=5, max_ping_burst=20, decode_rate=500.0)
    client = await RawSocket.open(server)
    try:
        client.send_json({"type": "session.start"})
        await client.until_type("session.ready")
        client.send_json({"type": "response.create", "input": "stream while flooded"})
        await client.until_type("response.text.delta")
        client.send(frame(0x9, b"p") * 500)
        assert await client.close_code() == 4005
    finally:
        client.abort()


@pytest.mark.parametrize("case", ["rsv2", "invalid utf-8 text", "oversize frame"])
async def test_a_hostile_frame_from_an_idle_session_is_cut_at_the_close_deadline(
    start_server: StartServer, case: str
) -> None:
    # No output, heartbeat or keepalive ping for far longer than the bound below: only
    # the close deadline can let the connection go while the peer keeps TCP open.
    server = await start_server(
        max_frame_bytes=4096, close_timeout=0.3, heartbeat_interval=600.0, ping_interval=600.0
    )
    client = await RawSocket.open(server)
    try:
        client.send_json({"type": "session.start"})
        ready = await client.until_type("session.ready")
        data, code = HOSTILE[case]
        client.send(data)
        assert await client.close_code() == code

        def let_go() -> bool:
            runtime = server.sessions.get(ready["session_id"])
            return not server.connections and (runtime is None or runtime.transport is None)

        await wait_until(let_go, timeout=WAIT)
    finally:
        client.abort()
