"""The in-process transport: a session runtime served without a socket.

The same runtime, engine and store as over WebSocket; the test pulls the events
itself (``MemoryTransport.take``) where a connection's writer would. What every
transport does (streaming, interrupt, the slow-consumer close, a terminal close,
wakes) is in ``test_conformance.py``; here is what only this one has.
"""

from __future__ import annotations

from typing import Any

import pytest

from protocol.codes import CloseCode
from protocol.messages import SessionStart, parse_client_message
from tests.wsserver.conftest import StartServer
from wsserver.session.runtime import SessionRuntime
from wsserver.transport.memory import MemoryTransport
from wsserver.worker.server import WorkerServer


async def _open(server: WorkerServer) -> tuple[SessionRuntime, MemoryTransport]:
    start = parse_client_message({"type": "session.start"})
    assert isinstance(start, SessionStart)
    runtime, _ = await server.manager.open(start)
    transport = MemoryTransport()
    transport.attach(runtime)
    return runtime, transport


def _send(runtime: SessionRuntime, **message: Any) -> None:
    runtime.handle(parse_client_message(message))  # type: ignore[arg-type]


async def test_the_runtimes_wakes_are_counted(start_server: StartServer) -> None:
    server = await start_server(answer_tokens=20)
    runtime, transport = await _open(server)
    _send(runtime, type="response.create", input="hello")
    events = await transport.until("response.done")
    assert events[-1].type == "response.done"
    assert transport.wakes > 0


async def test_waiting_on_a_closed_transport_raises(start_server: StartServer) -> None:
    server = await start_server(answer_tokens=2000, decode_rate=50.0)
    runtime, transport = await _open(server)
    _send(runtime, type="response.create", input="stop me")
    await transport.until("response.created")
    transport.close(CloseCode.SESSION_CLOSED, "closed by the test")
    assert transport.closed == (CloseCode.SESSION_CLOSED, "closed by the test")
    assert transport.take() == []
    with pytest.raises(ConnectionError, match=r"closed before response\.done"):
        await transport.until("response.done")
