"""The transport tests run against both send paths of native sessions (``--ws-engine``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.wsserver.conftest import TEST_DEFAULTS, StartServer
from wsserver.worker.server import WorkerServer
from wsserver.worker.settings import Settings


@pytest.fixture(params=["websockets", "fast"])
async def start_server(request: pytest.FixtureRequest) -> AsyncIterator[StartServer]:
    """In-process workers on free loopback ports, with the send path under test."""
    servers: list[WorkerServer] = []

    async def factory(**overrides: Any) -> WorkerServer:
        settings = {**TEST_DEFAULTS, "ws_engine": request.param, **overrides}
        server = WorkerServer(Settings(**settings))
        await server.start()
        servers.append(server)
        return server

    yield factory
    for server in servers:
        await server.stop()
