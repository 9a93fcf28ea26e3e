"""A lean WebSocket client connection for load generation.

The servers share two cores with the load, so every microsecond the client
spends per frame is taken from the server under test. ``websockets``' asyncio
client costs tens of microseconds per received frame (a parser generator, a
message queue and a task wake-up per frame); this protocol parses server
frames in place and calls back synchronously, a few microseconds per frame.

It implements the client side of RFC 6455 that the benchmark needs: the
opening handshake (checked), masked text frames out, unmasked text frames in
(fragmented ones reassembled), ping answered with pong, and the closing
handshake. No extensions, no subprotocol: both servers then speak JSON.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import struct
from collections.abc import Callable
from typing import TypeVar, cast, overload
from urllib.parse import urlsplit

from websockets.utils import apply_mask

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_MAX_HEADER_BYTES = 16 * 1024
OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class WireError(Exception):
    """The server broke the handshake or the framing."""


def _accept_key(key: bytes) -> bytes:
    return base64.b64encode(hashlib.sha1(key + _GUID).digest())


def encode_frame(opcode: int, payload: bytes) -> bytes:
    """One final, masked client frame."""
    mask = os.urandom(4)
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    elif length < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
    return header + mask + apply_mask(payload, mask)


def handshake_answer(buffer: bytearray, key: bytes) -> str | bool | None:
    """Read the server's handshake response from the front of ``buffer``.

    ``False``: not all here yet; ``None``: upgraded (the head is removed from
    ``buffer``); a string: why the handshake failed.
    """
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return "handshake response too large" if len(buffer) > _MAX_HEADER_BYTES else False
    head = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    del buffer[: end + 4]
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in head[1:])
    }
    if not head[0].startswith("HTTP/1.1 101"):
        return f"handshake refused: {head[0]}"
    if headers.get("sec-websocket-accept", "").encode() != _accept_key(key):
        return "handshake: wrong Sec-WebSocket-Accept"
    return None


def split_frames(
    buffer: bytearray, on_frame: Callable[[bool, int, bytes], None], *, masked_ok: bool = True
) -> int:
    """Hand every complete frame in ``buffer`` to ``on_frame(fin, opcode, payload)``;
    returns the bytes consumed. ``masked_ok=False``: a masked frame raises WireError
    (servers never mask)."""
    offset, size = 0, len(buffer)
    while size - offset >= 2:
        first, second = buffer[offset], buffer[offset + 1]
        if second & 0x80 and not masked_ok:
            raise WireError("server frames must not be masked")
        length, start = second & 0x7F, offset + 2
        if length == 126:
            if size - start < 2:
                break
            (length,) = struct.unpack_from("!H", buffer, start)
            start += 2
        elif length == 127:
            if size - start < 8:
                break
            (length,) = struct.unpack_from("!Q", buffer, start)
            start += 8
        end = start + length
        if end > size:
            break
        on_frame(bool(first & 0x80), first & 0x0F, bytes(buffer[start:end]))
        offset = end
    return offset


class LeanConnection(asyncio.Protocol):
    """One client connection; text messages go to ``on_text`` as ``str``."""

    def __init__(self, host: str, port: int, path: str) -> None:
        self._request_key = base64.b64encode(os.urandom(16))
        self._request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {self._request_key.decode()}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
        self.transport: asyncio.Transport | None = None
        self.on_text: Callable[[str], None] = self._queue_text
        """Called with each text message; replace it to take over the connection."""
        self.on_lost: Callable[[], None] = lambda: None
        self._buffer = bytearray()
        self._upgraded = False
        self._fragments: list[bytes] = []
        loop = asyncio.get_running_loop()
        self.opened: asyncio.Future[None] = loop.create_future()
        self.first_text: asyncio.Future[str] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    # -- sending -----------------------------------------------------------------

    def send_text(self, text: str) -> None:
        """Queue one text message (no-op once the connection is gone)."""
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(encode_frame(OP_TEXT, text.encode()))

    async def close(self, timeout_s: float) -> None:
        """Closing handshake (code 1000), bounded by ``timeout_s``, then drop the socket."""
        if self.transport is None or self.closed.done():
            return
        if not self.transport.is_closing():
            self.transport.write(encode_frame(OP_CLOSE, struct.pack("!H", 1000)))
        try:
            await asyncio.wait_for(asyncio.shield(self.closed), timeout_s)
        except TimeoutError:
            self.transport.abort()

    # -- asyncio.Protocol ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(self._request)

    def connection_lost(self, exc: Exception | None) -> None:
        error = exc or ConnectionResetError("connection closed")
        for future in (self.opened, self.first_text):
            if not future.done():
                future.set_exception(error)
        if not self.closed.done():
            self.closed.set_result(None)
        self.on_lost()

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        if not self._upgraded and not self._handshake():
            return
        try:
            consumed = self._parse_frames(buffer)
        except WireError as exc:
            self._fail(exc)
            return
        del buffer[:consumed]

    # -- parsing -------------------------------------------------------------------

    def _handshake(self) -> bool:
        answer = handshake_answer(self._buffer, self._request_key)
        if answer is False:
            return False
        if isinstance(answer, str):
            self._fail(WireError(answer))
            return False
        self._upgraded = True
        self.opened.set_result(None)
        return True

    def _parse_frames(self, buffer: bytearray) -> int:
        """Handle every complete frame in ``buffer``; returns the bytes consumed."""
        return split_frames(buffer, self._on_frame, masked_ok=False)

    def _on_frame(self, fin: bool, opcode: int, payload: bytes) -> None:
        if opcode == OP_TEXT and fin:
            self.on_text(payload.decode())
        elif opcode in (OP_TEXT, OP_CONTINUATION):
            self._fragments.append(payload)
            if fin:
                text = b"".join(self._fragments).decode()
                self._fragments.clear()
                self.on_text(text)
        elif opcode == OP_PING:
            assert self.transport is not None
            self.transport.write(encode_frame(OP_PONG, payload))
        elif opcode == OP_CLOSE:
            assert self.transport is not None
            if not self.transport.is_closing():
                self.transport.write(encode_frame(OP_CLOSE, payload[:2]))
                self.transport.close()
        elif opcode == OP_BINARY:
            raise WireError("unexpected binary frame")

    def _queue_text(self, text: str) -> None:
        # Until a driver takes over, only the first message (session.ready) matters;
        # later ones (heartbeats to an idle session) are dropped.
        if not self.first_text.done():
            self.first_text.set_result(text)

    def _fail(self, exc: Exception) -> None:
        for future in (self.opened, self.first_text):
            if not future.done():
                future.set_exception(exc)
        if self.transport is not None:
            self.transport.abort()


_Connection = TypeVar("_Connection", bound=LeanConnection)


@overload
async def open_connection(url: str, timeout_s: float) -> LeanConnection: ...


@overload
async def open_connection(
    url: str, timeout_s: float, kind: Callable[[str, int, str], _Connection]
) -> _Connection: ...


async def open_connection(
    url: str,
    timeout_s: float,
    kind: Callable[[str, int, str], LeanConnection] = LeanConnection,
) -> LeanConnection:
    """Connect and complete the opening handshake (``kind``: the connection class)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    loop = asyncio.get_running_loop()

    def factory() -> LeanConnection:
        return kind(host, port, parts.path or "/")

    _, connection = await asyncio.wait_for(loop.create_connection(factory, host, port), timeout_s)
    try:
        await asyncio.wait_for(asyncio.shield(connection.opened), timeout_s)
    except BaseException:
        # Nobody will read these any more: cancelled, they take no "never retrieved" error.
        connection.opened.cancel()
        connection.first_text.cancel()
        if connection.transport is not None:
            connection.transport.abort()
        raise
    return connection
