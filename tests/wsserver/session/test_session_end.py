"""How connections end: sessions leave the store; a failing writer closes 1011, once."""

from __future__ import annotations

import asyncio
import logging

import msgpack
import pytest
import redis.asyncio as redis_asyncio

from protocol.encoding import JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL
from protocol.events import SESSION_UPDATED
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient, wait_until


async def test_mass_close_removes_every_session(start_server: StartServer, redis_url: str) -> None:
    server = await start_server(store=redis_url, answer_tokens=1000, decode_rate=20)
    clients = [await RawClient.connect(url_of(server)) for _ in range(60)]
    readies = [await client.start() for client in clients]
    for client in clients:
        await client.send({"type": "response.create", "input": "long answer"})
    for client in clients:
        await client.until("response.text.delta")
    await asyncio.gather(*(client.close() for client in clients))
    await wait_until(lambda: not server.sessions)
    store = redis_asyncio.Redis.from_url(redis_url)
    try:
        for _ in range(200):
            if not await store.keys("wss:*:meta"):
                break
            await asyncio.sleep(0.05)
        assert await store.keys("wss:*:meta") == []
        assert len(await store.keys("wss:*:usage")) == 60, "the ledger outlives the session"
    finally:
        await store.aclose()
    for ready in readies[:5]:
        again = await RawClient.connect(url_of(server))
        await again.resume(ready, 0)
        assert (await again.recv())["code"] == "unknown_session"
        await again.close()


@pytest.mark.parametrize("subprotocol", [JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL])
async def test_an_event_that_cannot_be_sent_closes_1011_logs_one_line_and_resume_goes_on(
    start_server: StartServer, caplog: pytest.LogCaptureFixture, subprotocol: str
) -> None:
    server = await start_server()
    client = await RawClient.connect(url_of(server), subprotocol=subprotocol)
    ready = await client.start()
    runtime = server.sessions[ready["session_id"]]
    caplog.set_level(logging.DEBUG)
    # A lone surrogate: a valid Python str that neither UTF-8 nor msgpack can carry,
    # queued as the runtime queues any session event.
    runtime.session.push_event(SESSION_UPDATED, {"tools": ["bad \ud800"]})
    runtime.wake()
    assert await client.closed_code() == 1011
    await wait_until(lambda: runtime.transport is None)
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(problems) == 1, [r.getMessage() for r in problems]
    assert problems[0].exc_info is None, "one line, no traceback"
    assert "could not be encoded" in problems[0].getMessage()

    # The event was voided in the replay buffer: every later resume goes on, in both encodings.
    for resume_with in (JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL):
        again = await RawClient.connect(url_of(server), subprotocol=resume_with)
        await again.resume(ready, 0)
        assert (await again.until("session.ready"))["resumed"] is True
        voided = await again.recv()
        assert (voided["type"], voided["seq"], voided["code"]) == ("error", 1, "internal_error")
        await again.send({"type": "response.create", "input": "still here"})
        done = await again.until("response.done")
        assert done["status"] == "completed"
        again.abort()
        await wait_until(lambda: runtime.transport is None)
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1


async def test_an_event_the_store_cannot_carry_is_voided_and_the_writer_goes_on(
    start_server: StartServer, redis_url: str
) -> None:
    server = await start_server(store=redis_url)
    first = await RawClient.connect(url_of(server))
    ready = await first.start()
    runtime = server.sessions[ready["session_id"]]
    # Detached: no connection writer voids it first, the store writer meets it as it is.
    first.abort()
    await wait_until(lambda: runtime.transport is None)
    runtime.session.push_event(SESSION_UPDATED, {"tools": ["bad \ud800"]})
    event = runtime.session.next_event()  # numbered, as a detached session's output is
    assert event is not None
    runtime.events_numbered()
    await server.persister.flush()
    stored = await server.store.read_log(ready["session_id"], 0)
    assert [seq for seq, _ in stored.events] == [event.seq]
    voided = msgpack.unpackb(stored.events[0][1])
    assert (voided["type"], voided["code"]) == ("error", "internal_error")
    # The writer still runs: another session's events reach the store.
    other = await RawClient.connect(url_of(server))
    other_ready = await other.start()
    await other.send({"type": "response.create", "input": "hello"})
    assert (await other.until("response.done"))["status"] == "completed"
    await server.persister.flush()
    other_log = await server.store.read_log(other_ready["session_id"], 0)
    assert msgpack.unpackb(other_log.events[-1][1])["type"] == "response.done"
    await other.close()
