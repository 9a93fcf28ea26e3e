"""The in-process transport: a session runtime served without a socket.

The same runtime, engine and store as over WebSocket; the test pulls the events
itself (``MemoryTransport.take``) where a connection's writer would.
"""

from __future__ import annotations

from typing import Any

from protocol.codes import CloseCode
from protocol.events import Event
from protocol.messages import SessionStart, parse_client_message
from tests.wsserver.conftest import StartServer
from tests.wsserver.wire import wait_until
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


def _types(events: list[Event]) -> list[str]:
    return [e.type for e in events]


async def test_a_response_streams_to_the_memory_transport(start_server: StartServer) -> None:
    server = await start_server(answer_tokens=20)
    runtime, transport = await _open(server)
    _send(runtime, type="response.create", input="hello")
    events = await transport.until("response.done")
    kinds = _types(events)
    assert kinds[0] == "response.created"
    assert kinds.count("response.done") == 1
    assert "response.text.delta" in kinds
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "gap-free"
    assert transport.wakes > 0
    done = events[-1].to_message()
    assert done["status"] == "completed"
    assert done["usage"]["output_tokens_delivered"] == done["usage"]["output_tokens_generated"]


async def test_an_unread_outbox_past_its_bound_closes_the_transport(
    start_server: StartServer,
) -> None:
    """The core's Close effect reaches the transport; its departure leaves the session
    resumable (4000 is a resume code) and the response generating on."""
    server = await start_server(outbox_max_bytes=2048, answer_tokens=2000, decode_rate=2000.0)
    runtime, transport = await _open(server)
    _send(runtime, type="response.create", input="a long answer nobody reads")
    await wait_until(lambda: transport.closed is not None, timeout=30)
    assert transport.closed is not None and transport.closed[0] == CloseCode.SLOW_CONSUMER
    assert runtime.transport is None
    assert runtime.session_id in server.sessions
    assert runtime.session.active is not None, "it generates on for the grace period"


async def test_a_terminal_close_ends_the_session(start_server: StartServer) -> None:
    server = await start_server(answer_tokens=2000, decode_rate=50.0)
    runtime, transport = await _open(server)
    _send(runtime, type="response.create", input="stop me")
    await transport.until("response.created")
    transport.close(CloseCode.SESSION_CLOSED, "closed by the test")
    assert runtime.closed
    assert runtime.session_id not in server.sessions
    assert runtime.session.active is None
    assert runtime.session.last_response is not None
    assert runtime.session.last_response.reason == "session_closed"
