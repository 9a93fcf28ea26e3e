"""A hostile or unlucky client against the fast send path, next to the default one.

Every test starts a real worker on loopback and runs once per send path (or drives
both in one test, to compare their bytes): a reader that stalls and resumes
elsewhere, resets and closes at awkward moments, racing resumes, a half-closed TCP
connection, awkward text. Nothing may be lost or doubled, and no traceback or
asyncio complaint may reach the log.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import struct
from collections.abc import AsyncIterator

import pytest

from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient, wait_until

pytestmark = pytest.mark.both_engines

WAIT = 10.0


@pytest.fixture(autouse=True)
async def quiet_log(caplog: pytest.LogCaptureFixture) -> AsyncIterator[pytest.LogCaptureFixture]:
    """After the test: no traceback and no complaint from asyncio in the log."""
    yield caplog
    gc.collect()  # a task whose exception nobody retrieved logs it when collected
    await asyncio.sleep(0)
    records = [r for when in ("setup", "call", "teardown") for r in caplog.get_records(when)]
    noisy = [
        r
        for r in records
        if r.exc_info is not None or (r.name == "asyncio" and r.levelno >= logging.WARNING)
    ]
    assert not noisy, [r.getMessage() for r in noisy]


def _reset_on_close(client: RawClient) -> None:
    """Make the client's next abort send a TCP reset (RST), not a FIN."""
    sock = client.ws.transport.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def test_a_reset_right_after_resume_writes_nothing_into_the_dead_socket(
    start_server: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    # The reset reaches the worker while the replay is being written: it must stop
    # at the first failed write (asyncio warns for every write after that one).
    server = await start_server(decode_rate=5000.0, answer_tokens=2000)
    url = url_of(server)
    first = await RawClient.connect(url)
    ready = await first.start()
    await first.send({"type": "response.create", "input": "fill the replay buffer"})
    await first.until("response.done")
    first.abort()
    await wait_until(lambda: not server.connections, timeout=WAIT)
    for _ in range(2):
        again = await RawClient.connect(url)
        _reset_on_close(again)
        await again.resume(ready, 0)
        again.abort()
        await wait_until(lambda: not server.connections, timeout=WAIT)
    assert not [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    runtime = server.sessions[ready["session_id"]]
    assert runtime.transport is None, "still resumable"
