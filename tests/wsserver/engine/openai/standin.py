"""A stand-in upstream: a real loopback HTTP server that replays recorded answers.

For the servers that cannot run here (vLLM, Ollama, OpenAI) and for the failures a
real one will not make on cue (a stall, a reset, a line that never ends). Each request
takes the next :class:`Reply` (the last one repeats); a reply's body is a list of
writes, bytes or a pause in seconds, sent with chunked transfer encoding like a real
server, then ``end`` says how the connection ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

STREAMS = Path(__file__).parent / "streams"


def recorded(name: str) -> bytes:
    """A recorded stream's exact bytes."""
    return (STREAMS / name).read_bytes()


def events_of(stream: bytes) -> list[bytes]:
    """A stream cut into its events, one write each (as servers flush them)."""
    return [part + b"\n\n" for part in stream.split(b"\n\n") if part]


@dataclass
class Reply:
    """One answer of the stand-in."""

    body: Sequence[bytes | float] = ()
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/event-stream"})
    end: Literal["close", "reset", "hang"] = "close"
    """After the body: finish the chunked body, reset the connection, or stay silent."""


class StandIn:
    """The server; ``requests`` holds the JSON bodies it was sent, ``disconnects`` counts."""

    def __init__(self, replies: Sequence[Reply], port: int = 0) -> None:
        self.replies = list(replies)
        self.port = port
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.disconnects = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> StandIn:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # Stopped mid-reply; ending cancelled makes asyncio log a traceback on 3.11.
            pass
        finally:
            self._writers.discard(writer)
            self.disconnects += 1
            writer.transport.abort()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                key, value = line.split(":", 1)
                headers[key.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.headers.append(headers)
        self.requests.append(json.loads(body) if body else {})
        reply = self.replies[min(len(self.requests) - 1, len(self.replies) - 1)]
        status_line = f"HTTP/1.1 {reply.status} X\r\n"
        extra = "".join(f"{k}: {v}\r\n" for k, v in reply.headers.items())
        writer.write(f"{status_line}{extra}Transfer-Encoding: chunked\r\n\r\n".encode())
        for part in reply.body:
            if isinstance(part, float | int):
                await writer.drain()
                await asyncio.sleep(part)
                continue
            writer.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
        await writer.drain()
        if reply.end == "reset":
            sock = writer.get_extra_info("socket")
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if reply.end == "hang":
            # Silent until the client goes: its next read fails when it closes.
            await reader.read()
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True
