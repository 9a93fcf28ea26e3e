from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from wsserver.worker.server import WorkerServer
from wsserver.worker.settings import Settings

StartServer = Callable[..., Awaitable[WorkerServer]]

# Fast defaults for tests; each test overrides what it is about.
TEST_DEFAULTS: dict[str, Any] = {
    "host": "127.0.0.1",
    "port": 0,
    "decode_rate": 200.0,
    "heartbeat_interval": 30.0,
    "grace_period": 5.0,
    # WSSERVER_TEST_WS_ENGINE=fast runs every in-process worker test on the fast send path.
    "ws_engine": os.environ.get("WSSERVER_TEST_WS_ENGINE", "websockets"),
}


@pytest.fixture
async def start_server() -> AsyncIterator[StartServer]:
    """Start in-process workers on free loopback ports; stopped after the test."""
    servers: list[WorkerServer] = []

    async def factory(**overrides: Any) -> WorkerServer:
        server = WorkerServer(Settings(**{**TEST_DEFAULTS, **overrides}))
        await server.start()
        servers.append(server)
        return server

    yield factory
    for server in servers:
        await server.stop()


def url_of(server: WorkerServer) -> str:
    """The ws:// URL of a started worker."""
    return f"ws://127.0.0.1:{server.port}"
