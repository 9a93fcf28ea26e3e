"""Request targets that no URL parser takes (``//[::1``): a 400, not a traceback per request.

A client that sends them in a loop must not fill the router's log with tracebacks
(nor get no answer at all), on the main port or on the admin listener.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.processes import eventually
from tests.redis_server import free_port
from tests.wsserver.router.test_router import RouterProcess

NO_STORE = "redis://127.0.0.1:1/0"
TARGETS = ("//[::1", "http://[x/metrics", "//[v1.x]/?session_id=a", "/?x=1#[")


@pytest.fixture(scope="module")
def router() -> Iterator[tuple[RouterProcess, int]]:
    admin = free_port()
    process = RouterProcess(NO_STORE, "--store-timeout", "0.2", "--admin-port", str(admin))
    yield process, admin
    process.stop()


async def status_of(port: int, target: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    line = await asyncio.wait_for(reader.readline(), 10)
    writer.close()
    return line


async def test_an_unparsable_target_is_a_400_without_a_traceback(
    router: tuple[RouterProcess, int],
) -> None:
    process, admin = router
    main = int(process.url.rsplit(":", 1)[1].split("/")[0])
    for target in TARGETS:
        for _ in range(5):
            assert (await status_of(main, target)).startswith(b"HTTP/1.1 400"), target
            assert (await status_of(admin, target)).split(b" ")[1] in (b"400", b"404"), target
    await eventually(lambda: process.stats()["bad_requests"] >= 5)
    log = "".join(process.lines)
    assert "Traceback" not in log and "connection failed" not in log, log[-3000:]
