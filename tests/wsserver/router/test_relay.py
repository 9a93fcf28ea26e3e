"""The router's byte relay (protocol callbacks) between raw TCP peers, on loopback.

The router is the real one, in process; the worker is a stand-in that answers the
upgrade with ``101`` and then does what each test needs with the raw bytes (echo,
half-close, die, flood), so every byte and every TCP end is the test's to check.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from wsserver.registry.base import WorkerInfo
from wsserver.registry.memory import MemoryWorkerRegistry
from wsserver.router.server import Router, RouterSettings
from wsserver.router.splice import WRITE_HIGH_WATER

HEAD = (
    b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)
SWITCHING = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
READ_MAX = 256 * 1024
"""The event loop's largest read: what one direction may hold beyond the high-water mark."""

Behaviour = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class StandInWorker:
    """Reads the request head, answers ``101`` (plus ``greeting``), then runs ``behaviour``."""

    def __init__(self) -> None:
        self.behaviour: Behaviour = echo
        self.greeting = b""
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        # A deep backlog, as the worker's: 300 connections at once on a loaded machine
        # must not wait out SYN retries (the router would give up on it: 503).
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(SWITCHING + self.greeting)  # one write: the router reads both at once
            await self.behaviour(reader, writer)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Send back what arrives; its first 2,000 bytes one byte per write."""
    sent = 0
    while data := await reader.read(65536):
        for i in range(len(data)):
            if sent >= 2000:
                writer.write(data[i:])
                sent += len(data) - i
                break
            writer.write(data[i : i + 1])
            sent += 1
            await writer.drain()
        await writer.drain()


@pytest.fixture
async def worker() -> AsyncIterator[StandInWorker]:
    stand_in = StandInWorker()
    yield stand_in
    await stand_in.stop()


@pytest.fixture
async def router(worker: StandInWorker) -> AsyncIterator[Router]:
    port = await worker.start()
    registry = MemoryWorkerRegistry(ttl=600)
    info = WorkerInfo("w", f"ws://127.0.0.1:{port}", 0, 0, False, time.time())
    await registry.publish(info)
    # A long linger: a prompt end below is the relay's doing, never the linger's.
    relay = Router(RouterSettings(port=0, linger_timeout=60), registry=registry)
    await relay.start()
    yield relay
    await relay.stop()
    assert relay.stats()["active"] == 0


async def connect(
    router: Router, early: bytes = b""
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """An upgraded raw connection through the router; ``early``: sent with the head."""
    reader, writer = await asyncio.open_connection("127.0.0.1", router.port, limit=1 << 20)
    writer.write(HEAD + early)
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101"), head
    return reader, writer


async def test_bytes_both_ways_byte_exact_under_fragmentation(router: Router) -> None:
    payload = os.urandom(3 * 1024 * 1024 + 2000)
    reader, writer = await connect(router)

    async def send() -> None:
        for i in range(2000):  # 1-byte writes, each its own segment (TCP_NODELAY)
            writer.write(payload[i : i + 1])
            await writer.drain()
        writer.write(payload[2000:])  # then one 3 MiB write
        await writer.drain()

    sender = asyncio.create_task(send())
    async with asyncio.timeout(30):
        echoed = await reader.readexactly(len(payload))
    await sender
    assert echoed == payload
    writer.close()


async def test_bytes_read_past_each_head_go_first(router: Router, worker: StandInWorker) -> None:
    # Both heads arrive with bytes behind them in the same segment: the streams that
    # read the heads hold those bytes when the splice takes the sockets over.
    worker.greeting = b"worker-first"
    reader, writer = await connect(router, early=b"client-first")
    async with asyncio.timeout(10):
        assert await reader.readexactly(12) == b"worker-first"
        assert await reader.readexactly(12) == b"client-first"  # echoed
    writer.close()


async def test_eof_from_the_client_half_closes_the_worker(
    router: Router, worker: StandInWorker
) -> None:
    heard: list[bytes] = []

    async def read_to_eof_then_answer(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        heard.append(await reader.read())  # everything, then the client's EOF
        writer.write(b"answer after your eof")
        await writer.drain()

    worker.behaviour = read_to_eof_then_answer
    reader, writer = await connect(router)
    writer.write(b"last words")
    writer.write_eof()
    async with asyncio.timeout(10):
        # The other direction still flows after the half-close, then ends.
        assert await reader.read() == b"answer after your eof"
    assert heard == [b"last words"]
    writer.close()


async def test_eof_from_the_worker_half_closes_the_client(
    router: Router, worker: StandInWorker
) -> None:
    heard: list[bytes] = []

    async def speak_then_eof(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"goodbye")
        writer.write_eof()
        heard.append(await reader.read())

    worker.behaviour = speak_then_eof
    reader, writer = await connect(router)
    async with asyncio.timeout(10):
        assert await reader.read() == b"goodbye"  # then EOF
        writer.write(b"reply after your eof")
        writer.write_eof()
        await asyncio.wait_for(_until(lambda: bool(heard)), 10)
    assert heard == [b"reply after your eof"]
    writer.close()


async def test_worker_dying_mid_stream_ends_the_client_promptly(
    router: Router, worker: StandInWorker
) -> None:
    async def die(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"partial")
        await writer.drain()
        await reader.readexactly(4)  # the client got "partial" and said so
        # A reset (linger 0), as from a crashed host or a killed process with unread data.
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    worker.behaviour = die
    reader, writer = await connect(router)
    assert await reader.readexactly(7) == b"partial"
    writer.write(b"seen")
    # Well under the 60 s linger: the relay itself ended the client's connection.
    async with asyncio.timeout(10):
        with contextlib.suppress(ConnectionResetError):  # an abort towards it: as good
            assert await reader.read() == b""
    await asyncio.wait_for(_until(lambda: router.stats()["active"] == 0), 10)
    writer.close()


class Flood:
    """96 MiB written as fast as the peer's TCP window lets through."""

    BLOCK = os.urandom(1 << 20)
    BLOCKS = 96

    def __init__(self) -> None:
        self.sent = 0
        self.blocked = False
        self.done = False

    async def run(self, writer: asyncio.StreamWriter) -> None:
        for _ in range(self.BLOCKS):
            writer.write(self.BLOCK)
            self.blocked = True
            await writer.drain()
            self.blocked = False
            self.sent += len(self.BLOCK)
        self.done = True

    async def stalled_or_done(self) -> None:
        """Until the sender is held back (blocked, no progress for 0.3 s) or finished."""
        last = -1
        async with asyncio.timeout(60):
            while not self.done:
                await asyncio.sleep(0.3)
                if self.blocked and self.sent == last:
                    return
                last = self.sent

    async def received_by(self, reader: asyncio.StreamReader) -> None:
        """Every byte, in order."""
        async with asyncio.timeout(60):
            for _ in range(self.BLOCKS):
                assert await reader.readexactly(len(self.BLOCK)) == self.BLOCK


def assert_bounded(router: Router, flood: Flood) -> None:
    held = router.stats()["relay_buffered_bytes"]
    # Per direction: the high-water mark plus one read.
    assert held <= 2 * (WRITE_HIGH_WATER + READ_MAX), held
    assert not flood.done, "the sender got everything out to a peer that read nothing"


def small_receive_buffer(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)  # a phone on a bad link


async def test_client_that_stops_reading_bounds_the_router_memory(
    router: Router, worker: StandInWorker
) -> None:
    flood = Flood()

    async def flood_the_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await flood.run(writer)

    worker.behaviour = flood_the_client
    reader, writer = await connect(router)
    small_receive_buffer(writer)
    # The client reads nothing. The worker either stalls (TCP holds it back) or, were
    # the router buffering for the client, gets all 96 MiB out.
    await flood.stalled_or_done()
    assert_bounded(router, flood)
    await flood.received_by(reader)  # reading again, the client gets it all
    assert flood.done
    writer.close()


async def test_worker_that_stops_reading_bounds_the_router_memory(
    router: Router, worker: StandInWorker
) -> None:
    flood, release, received = Flood(), asyncio.Event(), asyncio.Event()

    async def read_later(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        small_receive_buffer(writer)
        await release.wait()
        await flood.received_by(reader)
        received.set()

    worker.behaviour = read_later
    _reader, writer = await connect(router)
    sender = asyncio.create_task(flood.run(writer))
    await flood.stalled_or_done()
    assert_bounded(router, flood)
    release.set()
    async with asyncio.timeout(60):
        await received.wait()
        await sender
    writer.close()


async def test_many_concurrent_connections(router: Router) -> None:
    async def one(i: int) -> bytes:
        payload = os.urandom(20_000 + i)
        reader, writer = await connect(router)
        writer.write(payload)
        echoed = await reader.readexactly(len(payload))
        writer.close()
        return payload if echoed == payload else b""

    async with asyncio.timeout(60):
        results = await asyncio.gather(*(one(i) for i in range(300)))
    assert all(results)
    assert router.stats()["connections_relayed"] == 300
    await asyncio.wait_for(_until(lambda: router.stats()["active"] == 0), 10)


async def _until(condition: Callable[[], bool]) -> None:
    """Poll on the loop itself: the router's state is the loop's (no thread may read it)."""
    while not condition():  # noqa: ASYNC110 - nothing to wait on: the router sets no event
        await asyncio.sleep(0.02)
