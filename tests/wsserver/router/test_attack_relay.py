"""Attacks on the router's relay from the worker's side and from many aborting clients.

The router is the real one, in process; the "workers" are raw TCP servers on loopback
that answer the forwarded head as each attack needs.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from tests.processes import eventually
from wsserver.registry.base import WorkerInfo
from wsserver.registry.memory import MemoryWorkerRegistry
from wsserver.router.server import Router, RouterSettings

HEAD = (
    b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)
SWITCHING = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"

Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class RawWorker:
    """A TCP server that reads the request head and then runs ``answer``."""

    def __init__(self) -> None:
        self.answer: Answer = switch_and_hold
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=2048)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            await self.answer(reader, writer)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


async def switch_and_hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer 101, then read until the router's end."""
    writer.write(SWITCHING)
    while await reader.read(65536):
        pass


@pytest.fixture
async def worker() -> AsyncIterator[RawWorker]:
    raw = RawWorker()
    yield raw
    await raw.stop()


@pytest.fixture
async def router(worker: RawWorker) -> AsyncIterator[Router]:
    port = await worker.start()
    registry = MemoryWorkerRegistry(ttl=600)
    await registry.publish(WorkerInfo("w", f"ws://127.0.0.1:{port}", 0, 0, False, time.time()))
    relay = Router(RouterSettings(port=0, linger_timeout=60, connect_timeout=5), registry=registry)
    await relay.start()
    yield relay
    await relay.stop()
    assert relay.stats()["active"] == 0


async def test_a_worker_answer_past_the_head_limit_is_a_failed_worker(
    router: Router, worker: RawWorker, caplog: pytest.LogCaptureFixture
) -> None:
    # Not an HTTP answer (another service on the registered port, a broken worker):
    # 70 KiB with no blank line, past the router's 64 KiB head read.
    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nX: " + b"a" * 70_000)
        await writer.drain()
        await reader.read()

    worker.answer = flood
    caplog.set_level(logging.INFO, logger="wsserver.router")
    reader, writer = await asyncio.open_connection("127.0.0.1", router.port)
    writer.write(HEAD)
    async with asyncio.timeout(10):
        answer = await reader.read()
    writer.close()
    assert answer.startswith(b"HTTP/1.1 503"), answer[:80]
    assert router.stats()["worker_failures"] == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def abort_with_reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a client that crashes."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@pytest.mark.parametrize("when", ["before_answer", "after_upgrade"])
async def test_many_clients_that_reset_at_once_leave_nothing_behind(
    router: Router, worker: RawWorker, caplog: pytest.LogCaptureFixture, when: str
) -> None:
    answered = asyncio.Event()

    async def slow_switch(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await answered.wait()  # every client is gone (or upgraded) first
        await switch_and_hold(reader, writer)

    worker.answer = slow_switch if when == "before_answer" else switch_and_hold
    caplog.set_level(logging.INFO)
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    # Garbage of earlier tests in this process first: a client one left unclosed
    # reports itself ("Unclosed ClusterNode object") to whichever handler is current
    # when the collector finds it, and this one is for the router's errors only.
    gc.collect()
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    try:
        clients = []
        for _ in range(10):
            batch = [asyncio.open_connection("127.0.0.1", router.port) for _ in range(50)]
            clients += await asyncio.gather(*batch)
        for _reader, writer in clients:
            writer.write(HEAD)
        if when == "after_upgrade":
            async with asyncio.timeout(30):
                for reader, _writer in clients:
                    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 101")
        else:
            # the router forwarded every head
            await eventually(lambda: len(router._connections) == len(clients), 30)
        for _reader, writer in clients:
            abort_with_reset(writer)
        answered.set()
        await eventually(
            lambda: not (router.stats()["active"] or router.relay.splices or router._connections),
            30,
        )
    finally:
        loop.set_exception_handler(None)
    assert not errors, errors[:3]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text[-2000:]
