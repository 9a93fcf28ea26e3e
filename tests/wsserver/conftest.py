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
    # WSSERVER_TEST_WS_ENGINE=fast runs every in-process worker test on the fast send path
    # (by hand; the suite runs only the tests marked both_engines on it).
    "ws_engine": os.environ.get("WSSERVER_TEST_WS_ENGINE", "websockets"),
}


ENGINES = ("websockets", "fast")
"""The send paths of native sessions (``--ws-engine``)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``both_engines`` runs once per send path, every other test on one.

    Only the send path's own tests and a chosen few that cover what it does (order,
    merging under a slow reader, the outbox bound, interrupts, replay, msgpack, closes)
    are marked: running every worker test twice cost a minute and found nothing more.
    """
    if "ws_engine" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "both_engines"
    ):
        metafunc.parametrize("ws_engine", ENGINES, indirect=True)


@pytest.fixture
def ws_engine(request: pytest.FixtureRequest) -> str:
    """The send path of the test's workers: its ``both_engines`` param, else the default."""
    return str(getattr(request, "param", TEST_DEFAULTS["ws_engine"]))


@pytest.fixture
async def start_server(ws_engine: str) -> AsyncIterator[StartServer]:
    """Start in-process workers on free loopback ports; stopped after the test."""
    servers: list[WorkerServer] = []

    async def factory(**overrides: Any) -> WorkerServer:
        server = WorkerServer(Settings(**{**TEST_DEFAULTS, "ws_engine": ws_engine, **overrides}))
        await server.start()
        servers.append(server)
        return server

    yield factory
    for server in servers:
        await server.stop()


def url_of(server: WorkerServer) -> str:
    """The ws:// URL of a started worker."""
    return f"ws://127.0.0.1:{server.port}"
