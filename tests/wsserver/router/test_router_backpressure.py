"""A client that stops reading, behind the router: the worker must see it stall.

With the kernel's autotuning the router's socket buffers park a stalled client's
backlog (several MiB: a whole long answer), so the worker's writes never wait and its
slow-consumer bound never trips. ``--socket-buffer`` bounds them.
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

from tests.processes import WorkerProcess, eventually
from tests.redis_server import free_port
from tests.wsserver.metrics.scrape import scrape, value
from tests.wsserver.router.test_router import RouterProcess, sees


def masked(message: dict[str, Any]) -> bytes:
    """A client text frame (mask key zero: the payload goes as is)."""
    payload = json.dumps(message).encode()
    assert len(payload) < 126
    return bytes([0x81, 0x80 | len(payload)]) + b"\0\0\0\0" + payload


async def stalled_client(url: str) -> socket.socket:
    """Open a session, ask for a long answer, and never read again (a 4 KiB window)."""
    host, port = url.removeprefix("ws://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (host, int(port)))
    await loop.sock_sendall(
        sock,
        b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += await loop.sock_recv(sock, 4096)
    assert answer.startswith(b"HTTP/1.1 101 "), answer[:80]
    await loop.sock_sendall(sock, masked({"type": "session.start"}))
    await loop.sock_sendall(sock, masked({"type": "response.create", "input": "a long one"}))
    return sock


async def test_a_stalled_client_behind_the_router_is_a_slow_consumer_for_its_worker(
    redis_url: str,
) -> None:
    admin = free_port()
    worker = WorkerProcess(
        *("--store", redis_url, "--registry-interval", "0.2", "--admin-port", str(admin)),
        *("--answer-tokens", "6000", "--decode-rate", "5000", "--max-output-tokens", "6000"),
        *("--outbox-max-bytes", "4096", "--socket-send-buffer", "16384"),
        name="w-stalled",
    ).start()
    router = RouterProcess(redis_url, "--socket-buffer", "16384")
    try:
        await sees(router, 1)
        base = f"http://127.0.0.1:{admin}"
        before = value(await asyncio.to_thread(scrape, base), "wsserver_connection_closes_total")
        sock = await stalled_client(router.url)

        def closed_4000() -> bool:
            samples = scrape(base)
            return value(samples, "wsserver_connection_closes_total", code="4000") >= 1

        # About 480 KB of frames: through unbounded router buffers they would all
        # leave the worker, and its outbox would never pass 4 KiB.
        await eventually(closed_4000, timeout=30)
        after = value(await asyncio.to_thread(scrape, base), "wsserver_connection_closes_total")
        assert after - before == 1
        sock.close()
    finally:
        assert router.stop() == 0, "".join(router.lines)
        worker.stop()
    assert "Traceback" not in "".join(router.lines)
