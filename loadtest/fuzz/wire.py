"""A raw WebSocket client for the fuzzer: any frame out, every close observed.

``websockets`` will not send a text frame that is not UTF-8, an unmasked frame
or a reserved opcode, so the fuzzer writes frames itself (masking with
``loadtest.common.wire.encode_frame``'s helper). It also needs to know exactly how each
connection ended: the close code the server sent, or that the TCP connection
went away with no close frame from the server (observed as 1006) while the
fuzzer itself had not aborted it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

import msgpack
from websockets.utils import apply_mask

from loadtest.common.wire import handshake_answer, split_frames

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame to write as it is: the fuzzer chooses every bit."""

    opcode: int
    payload: bytes
    fin: bool = True
    rsv: int = 0
    """RSV1-3 bits (0-7); set without an extension, they are a protocol error."""
    masked: bool = True
    """Clients must mask; an unmasked frame is a protocol error."""

    def encode(self) -> bytes:
        """The bytes on the wire."""
        first = (0x80 if self.fin else 0) | (self.rsv & 7) << 4 | (self.opcode & 0x0F)
        length = len(self.payload)
        mask_bit = 0x80 if self.masked else 0
        if length < 126:
            header = struct.pack("!BB", first, mask_bit | length)
        elif length < 1 << 16:
            header = struct.pack("!BBH", first, mask_bit | 126, length)
        else:
            header = struct.pack("!BBQ", first, mask_bit | 127, length)
        if not self.masked:
            return header + self.payload
        mask = os.urandom(4)
        return header + mask + apply_mask(self.payload, mask)


def text(message: Any) -> Frame:
    """A JSON message in a text frame (``ensure_ascii``: lone surrogates travel as escapes)."""
    return Frame(OP_TEXT, json.dumps(message).encode())


def binary(message: Any) -> Frame:
    """A msgpack message in a binary frame."""
    return Frame(OP_BINARY, msgpack.packb(message, use_bin_type=True))


class HandshakeRefused(Exception):
    """The server answered the upgrade with something other than 101."""

    def __init__(self, status_line: str) -> None:
        super().__init__(status_line)
        self.status_line = status_line


class FuzzConnection(asyncio.Protocol):
    """One connection: frames out as given, server messages decoded and tallied."""

    def __init__(
        self, host: str, port: int, path: str, subprotocol: str | None, headers: dict[str, str]
    ) -> None:
        self._key = base64.b64encode(os.urandom(16))
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {host}:{port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {self._key.decode()}",
            "Sec-WebSocket-Version: 13",
        ]
        if subprotocol:
            lines.append(f"Sec-WebSocket-Protocol: {subprotocol}")
        lines += [f"{name}: {value}" for name, value in headers.items()]
        self._request = ("\r\n".join(lines) + "\r\n\r\n").encode()
        self.binary_messages = subprotocol is not None and subprotocol.endswith("msgpack")
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._upgraded = False
        self._fragments: list[bytes] = []
        loop = asyncio.get_running_loop()
        self.opened: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self._writable = asyncio.Event()
        self._writable.set()
        self.messages: list[dict[str, Any]] = []
        """Decoded server messages not yet taken by :meth:`wait_for`."""
        self._waiters: list[tuple[Callable[[dict[str, Any]], bool], asyncio.Future[Any]]] = []
        self.error_codes: Counter[str] = Counter()
        self.received = 0
        self.close_code: int | None = None
        """The code of the server's close frame (``None``: it sent none)."""
        self.close_reason = ""
        self.close_unanswered = False
        self.canary_hits = 0
        self.canaries: tuple[bytes, ...] = ()
        self.created: set[str] = set()
        self.done: Counter[str] = Counter()
        self.undecodable = 0
        self.created_by: dict[str, Any] = {}
        """Response id -> the request id that started it."""
        self.internal_errors: list[Any] = []
        """Request ids of the ``internal_error`` answers (the first few)."""
        self.sent_close: int | None = None
        """The code of the close frame we sent (0: one without a code), if any."""
        self.server_closed_first = False

    # -- sending ---------------------------------------------------------

    def send(self, frame: Frame | bytes) -> bool:
        """Write a frame (or raw bytes); ``False`` once the connection is going away."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return False
        if isinstance(frame, bytes):
            transport.write(frame)
            return True
        if frame.opcode == OP_CLOSE and self.sent_close is None:
            payload = frame.payload
            self.sent_close = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 0
        transport.write(frame.encode())
        return True

    async def drain(self) -> None:
        """Wait while the socket's write buffer is high (a server that stopped reading)."""
        if not self._writable.is_set():
            await asyncio.wait(
                [asyncio.ensure_future(self._writable.wait()), self.closed],
                return_when=asyncio.FIRST_COMPLETED,
            )

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    async def close(self, timeout_s: float) -> None:
        """Closing handshake with 1000, then drop the socket if the server does not finish it."""
        if self.transport is None or self.closed.done():
            return
        self.send(Frame(OP_CLOSE, struct.pack("!H", 1000)))
        try:
            await asyncio.wait_for(asyncio.shield(self.closed), timeout_s)
        except TimeoutError:
            # The server never answered our close: to the client, that is 1006 too.
            self.close_unanswered = True
            self.abort()

    def abort(self) -> None:
        """Drop the TCP connection ourselves."""
        if self.transport is not None and not self.closed.done():
            self.transport.abort()

    @property
    def lost_without_close(self) -> bool:
        """Opened, then gone without a close frame from the server: a client sees 1006."""
        return self.opened.done() and self.closed.done() and self.close_code is None

    # -- waiting for messages --------------------------------------------

    async def wait_for(
        self, match: Callable[[dict[str, Any]], bool], timeout_s: float
    ) -> dict[str, Any] | None:
        """The first (queued or coming) message ``match`` accepts; ``None`` on timeout or close."""
        for index, message in enumerate(self.messages):
            if match(message):
                del self.messages[: index + 1]
                return message
        self.messages.clear()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        entry = (match, future)
        self._waiters.append(entry)
        try:
            done, _ = await asyncio.wait(
                [future, self.closed], timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
            return cast(dict[str, Any], future.result()) if future in done else None
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)
            future.cancel()

    def _deliver(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "error":
            code = str(message.get("code"))
            self.error_codes[code] += 1
            if code == "internal_error" and len(self.internal_errors) < 4:
                self.internal_errors.append(message.get("request_id"))
        elif kind == "response.created":
            self.created.add(str(message.get("response_id")))
            self.created_by[str(message.get("response_id"))] = message.get("request_id")
        elif kind == "response.done":
            self.done[str(message.get("response_id"))] += 1
        for match, future in self._waiters:
            if not future.done() and match(message):
                future.set_result(message)
                self._waiters.remove((match, future))
                return
        if len(self.messages) < 256:
            self.messages.append(message)

    # -- asyncio.Protocol ------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(self._request)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(exc or ConnectionResetError("closed before the upgrade"))
        if not self.closed.done():
            self.closed.set_result(None)
        self._writable.set()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if not self._upgraded and not self._handshake():
            return
        consumed = self._parse(self._buffer)
        del self._buffer[:consumed]

    def _handshake(self) -> bool:
        answer = handshake_answer(self._buffer, self._key)
        if answer is False:
            return False
        if isinstance(answer, str):
            self._fail(HandshakeRefused(answer.removeprefix("handshake refused: ")))
            return False
        self._upgraded = True
        self.opened.set_result(None)
        return True

    def _parse(self, buffer: bytearray) -> int:
        return split_frames(buffer, self._on_frame)

    def _on_frame(self, fin: bool, opcode: int, payload: bytes) -> None:
        if opcode == OP_CLOSE:
            if self.close_code is None:
                self.server_closed_first = self.sent_close is None
                self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                self.close_reason = payload[2:].decode(errors="replace")
            self.send(Frame(OP_CLOSE, payload[:2]))
            if self.transport is not None:
                self.transport.close()
            return
        if opcode == OP_PING:
            self.send(Frame(OP_PONG, payload))
            return
        if opcode not in (OP_TEXT, OP_BINARY, OP_CONT):
            return
        self._fragments.append(payload)
        if not fin:
            return
        data = b"".join(self._fragments)
        self._fragments.clear()
        self.received += 1
        for canary in self.canaries:
            if canary in data:
                self.canary_hits += 1
        self._decode(data)

    def _decode(self, data: bytes) -> None:
        if data[:1] in (b"\x01", b"\x02"):
            return  # an audio frame
        try:
            message = msgpack.unpackb(data, raw=False) if data[:1] != b"{" else json.loads(data)
        except (ValueError, msgpack.UnpackException):
            self.undecodable += 1
            return
        if isinstance(message, dict):
            self._deliver(message)

    def _fail(self, exc: Exception) -> None:
        if not self.opened.done():
            self.opened.set_exception(exc)
        self.abort()


async def open_fuzz_connection(
    url: str,
    *,
    subprotocol: str | None,
    headers: dict[str, str],
    timeout_s: float,
    canaries: tuple[bytes, ...] = (),
) -> FuzzConnection:
    """Connect and finish the opening handshake (``HandshakeRefused``, ``OSError``, timeout)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    loop = asyncio.get_running_loop()
    _, connection = await asyncio.wait_for(
        loop.create_connection(
            lambda: FuzzConnection(host, port, path, subprotocol, headers), host, port
        ),
        timeout_s,
    )
    connection.canaries = canaries
    try:
        await asyncio.wait_for(asyncio.shield(connection.opened), timeout_s)
    except BaseException:
        connection.opened.cancel()
        connection.abort()
        raise
    return connection
