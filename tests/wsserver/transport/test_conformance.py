"""The Transport contract, run against every transport: in-process and WebSocket.

Each test drives a real worker through a small driver per transport: open a
session, send client messages, collect the session's events until one of a type,
see how the transport was closed (and with which code), resume on a new one.
The memory driver attaches a ``MemoryTransport`` to a runtime from
``server.manager.open`` and takes the events itself; the WebSocket driver is a
real client socket on 127.0.0.1 (``tests.wsserver.wire.RawClient``). What only
one transport does (a flood, control frames, heartbeats) is tested beside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import pytest

from protocol.codes import CloseCode
from protocol.messages import SessionResume, SessionStart, parse_client_message
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.event_checks import of_type
from tests.wsserver.session.test_tool_calls import PARIS, WEATHER
from tests.wsserver.wire import RawClient, text_of, wait_until
from wsserver.session.runtime import SessionRuntime
from wsserver.transport.memory import MemoryTransport
from wsserver.worker.server import WorkerServer

WAIT = 30.0
"""Upper bound of any one wait (a safety net, not a timing)."""


class Driver(Protocol):
    """One session on one transport, as its client sees it."""

    server: WorkerServer
    runtime: SessionRuntime
    seen: list[dict[str, Any]]
    """Every session event received so far, in order (wire form, with ``seq``)."""

    async def send(self, **message: Any) -> None:
        """Send a client message of the session."""
        ...

    async def until(self, event_type: str) -> list[dict[str, Any]]:
        """Collect events until one of ``event_type`` came; those collected by this call."""
        ...

    def stall(self) -> None:
        """Stop reading (events pile up on the server)."""
        ...

    async def closed_code(self) -> int | None:
        """Read on until the transport is closed; the code it was closed with."""
        ...

    async def resume(self) -> Driver:
        """The same session on a new transport, from the last event seen here."""
        ...

    async def drop(self) -> None:
        """Let go of the transport (cleanup)."""
        ...


def _last_seq(seen: list[dict[str, Any]]) -> int:
    return seen[-1]["seq"] if seen else 0


class MemoryDriver:
    """A ``MemoryTransport`` attached to a runtime opened by the worker's manager."""

    def __init__(
        self, server: WorkerServer, runtime: SessionRuntime, token: str, replayed: list[Any]
    ) -> None:
        self.server = server
        self.runtime = runtime
        self.token = token
        self.transport = MemoryTransport()
        self.transport.attach(runtime)
        self.seen: list[dict[str, Any]] = []
        self._replayed = [event.to_message() for event in replayed]

    @classmethod
    async def open(cls, server: WorkerServer, **fields: Any) -> MemoryDriver:
        start = parse_client_message({"type": "session.start", **fields})
        assert isinstance(start, SessionStart)
        runtime, token = await server.manager.open(start)
        return cls(server, runtime, token, [])

    async def send(self, **message: Any) -> None:
        self.runtime.handle(parse_client_message(message))  # type: ignore[arg-type]

    async def until(self, event_type: str) -> list[dict[str, Any]]:
        # Replayed events first, as a connection's writer sends them before new ones.
        got, self._replayed = self._replayed, []
        if not any(m["type"] == event_type for m in got):
            events = await asyncio.wait_for(self.transport.until(event_type), WAIT)
            got += [event.to_message() for event in events]
        self.seen += got
        return got

    def stall(self) -> None:
        """Nothing to do: events are taken only by :meth:`until`."""

    async def closed_code(self) -> int | None:
        await wait_until(lambda: self.transport.closed is not None, timeout=WAIT)
        assert self.transport.closed is not None
        return self.transport.closed[0]

    async def resume(self) -> MemoryDriver:
        last_seq = _last_seq(self.seen)
        message = parse_client_message(
            {
                "type": "session.resume",
                "session_id": self.runtime.session_id,
                "resume_token": self.token,
                "last_seq": last_seq,
            }
        )
        assert isinstance(message, SessionResume)
        runtime = await self.server.manager.resume(message)
        # What a resuming connection replays: taken before the new transport attaches.
        replayed = runtime.session.replay_after(last_seq)
        return MemoryDriver(self.server, runtime, self.token, replayed)

    async def drop(self) -> None:
        """Nothing to release: the worker's stop ends the session."""


class WebSocketDriver:
    """A real client socket on 127.0.0.1; a small receive buffer so that it can stall."""

    def __init__(
        self, server: WorkerServer, client: RawClient, ready: dict[str, Any], token: str
    ) -> None:
        self.server = server
        self.client = client
        self.token = token
        self.runtime = server.sessions[ready["session_id"]]
        self.seen: list[dict[str, Any]] = []

    @classmethod
    async def open(cls, server: WorkerServer, **fields: Any) -> WebSocketDriver:
        client = await RawClient.connect(url_of(server), rcvbuf=4096)
        ready = await client.start(**fields)
        return cls(server, client, ready, ready["resume_token"])

    async def send(self, **message: Any) -> None:
        await self.client.send(message)

    async def until(self, event_type: str) -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        while not got or got[-1]["type"] != event_type:
            message = await self.client.recv(timeout=WAIT)
            if "seq" in message:  # a session event, not a connection message
                got.append(message)
        self.seen += got
        return got

    def stall(self) -> None:
        self.client.ws.transport.pause_reading()

    async def closed_code(self) -> int | None:
        self.client.ws.transport.resume_reading()
        return await self.client.closed_code(timeout=WAIT)

    async def resume(self) -> WebSocketDriver:
        client = await RawClient.connect(url_of(self.server), rcvbuf=4096)
        ready = {"session_id": self.runtime.session_id, "resume_token": self.token}
        await client.resume(ready, _last_seq(self.seen))
        assert (await client.until("session.ready", timeout=WAIT))["resumed"] is True
        return WebSocketDriver(self.server, client, ready, self.token)

    async def drop(self) -> None:
        self.client.abort()


OpenSession = Callable[..., Awaitable[Driver]]


@pytest.fixture(params=["memory", "websocket"])
async def open_session(request: pytest.FixtureRequest) -> AsyncIterator[OpenSession]:
    """Open sessions on a worker over the transport under test; dropped after the test."""
    kind = MemoryDriver if request.param == "memory" else WebSocketDriver
    drivers: list[Driver] = []

    async def factory(server: WorkerServer, **fields: Any) -> Driver:
        driver: Driver = await kind.open(server, **fields)
        drivers.append(driver)
        return driver

    yield factory
    for driver in drivers:
        await driver.drop()


def _gap_free(events: list[dict[str, Any]], first: int = 1) -> bool:
    return [e["seq"] for e in events] == list(range(first, first + len(events)))


@pytest.mark.both_engines
async def test_a_response_streams_gap_free_with_one_done_whose_usage_adds_up(
    start_server: StartServer, open_session: OpenSession
) -> None:
    server = await start_server(answer_tokens=20)
    driver = await open_session(server)
    await driver.send(type="response.create", input="hello")
    events = await driver.until("response.done")
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created"
    assert kinds.count("response.done") == 1
    assert "response.text.delta" in kinds
    assert _gap_free(events), "gap-free"
    done = events[-1]
    assert done["status"] == "completed"
    usage = done["usage"]
    assert usage["output_tokens_generated"] == 20
    assert usage["output_tokens_delivered"] == usage["output_tokens_generated"]
    response = driver.runtime.session.last_response
    assert response is not None
    assert text_of(events) == response.delivered_text(), "the text delivered is the text sent"


@pytest.mark.both_engines
async def test_an_interrupt_ends_the_answer_and_nothing_of_it_follows_its_done(
    start_server: StartServer, open_session: OpenSession
) -> None:
    server = await start_server(answer_tokens=5000, max_output_tokens=5000, decode_rate=1000.0)
    driver = await open_session(server)
    await driver.send(type="response.create", input="interrupt me")
    await driver.until("response.text.delta")
    await driver.send(type="response.interrupt")
    done = (await driver.until("response.done"))[-1]
    assert done["status"] == "interrupted"
    usage = done["usage"]
    assert 1 <= usage["output_tokens_delivered"] <= usage["output_tokens_generated"] < 5000
    # A second response, run to its end, is the barrier: the first had every chance
    # to leak more events by then.
    await driver.send(type="response.create", input="and now a short one", max_output_tokens=3)
    second = (await driver.until("response.done"))[-1]
    assert second["response_id"] != done["response_id"]
    assert second["status"] in ("completed", "incomplete")
    after = driver.seen[driver.seen.index(done) + 1 :]
    assert [e for e in after if e.get("response_id") == done["response_id"]] == []
    assert len(of_type(driver.seen, "response.done")) == 2
    assert _gap_free(driver.seen)


@pytest.mark.both_engines
async def test_a_consumer_past_the_outbox_bound_is_closed_4000_and_resumes(
    start_server: StartServer, open_session: OpenSession
) -> None:
    """The core's Close effect reaches the transport; its departure leaves the session
    resumable (4000 is a resume code) and the response generating on."""
    tokens = 4000
    server = await start_server(
        answer_tokens=tokens,
        max_output_tokens=tokens,
        decode_rate=4000.0,
        outbox_max_bytes=4096,
        # Small socket buffers so a stalled reader backs up into the outbox quickly.
        socket_send_buffer=8192,
        write_limit=4096,
        # Long enough for the client to read what is queued ahead of the close frame.
        slow_consumer_close_timeout=WAIT,
        grace_period=WAIT,
    )
    driver = await open_session(server)
    runtime = driver.runtime
    driver.stall()
    await driver.send(type="response.create", input="a long answer nobody reads")
    await wait_until(lambda: runtime.transport is None, timeout=WAIT)
    assert runtime.session_id in server.sessions, "detached, not ended"
    assert runtime.session.active is not None, "it generates on for the grace period"
    assert await driver.closed_code() == CloseCode.SLOW_CONSUMER

    resumed = await driver.resume()
    assert runtime.transport is not None
    events = await resumed.until("response.done")
    done = events[-1]
    assert done["status"] == "completed"
    assert done["usage"]["output_tokens_generated"] == tokens
    assert _gap_free(driver.seen + events), "nothing lost across the close"
    assert len(of_type(driver.seen + events, "response.done")) == 1


@pytest.mark.both_engines
async def test_a_terminal_close_ends_the_session(
    start_server: StartServer, open_session: OpenSession
) -> None:
    server = await start_server(answer_tokens=2000, decode_rate=50.0)
    driver = await open_session(server)
    runtime = driver.runtime
    await driver.send(type="response.create", input="stop me")
    await driver.until("response.created")
    transport = runtime.transport
    assert transport is not None
    # The server closes it through the interface, with a terminal code.
    transport.close(CloseCode.SESSION_CLOSED, "closed by the test")
    assert runtime.transport is None, "the close detached it at once"
    assert runtime.closed
    assert runtime.session_id not in server.sessions
    assert runtime.session.active is None
    assert runtime.session.last_response is not None
    assert runtime.session.last_response.reason == "session_closed"
    assert await driver.closed_code() == CloseCode.SESSION_CLOSED


@pytest.mark.both_engines
async def test_a_runtime_that_lets_its_transport_go_closes_it_with_its_code(
    start_server: StartServer, open_session: OpenSession
) -> None:
    """A session taken over elsewhere: the runtime lets go first, so the close is no
    departure (the response is the new owner's to end), and the client resumes there."""
    server = await start_server(answer_tokens=2000, decode_rate=50.0)
    driver = await open_session(server)
    runtime = driver.runtime
    await driver.send(type="response.create", input="move me")
    await driver.until("response.created")
    runtime.moved()
    assert runtime.transport is None
    assert runtime.closed
    assert runtime.session_id not in server.sessions
    assert runtime.session.last_response is None, "not ended here: the new owner ends it"
    assert await driver.closed_code() == CloseCode.SESSION_MOVED


async def test_events_of_a_timer_reach_the_transport_by_the_runtimes_wake(
    start_server: StartServer, open_session: OpenSession
) -> None:
    """Nothing from the client, nothing polled: the tool-wait timer ends the response
    and only the runtime's wake tells the transport there is a response.done to send."""
    # No heartbeat during the test: its control frame would wake the writer too.
    server = await start_server(heartbeat_interval=4 * WAIT)
    driver = await open_session(server, tools=[WEATHER], settings={"tool_timeout_ms": 200})
    await driver.send(type="response.create", input=PARIS)
    await driver.until("response.tool_call")
    done = (await driver.until("response.done"))[-1]
    assert done["status"] == "incomplete"
    assert _gap_free(driver.seen)
