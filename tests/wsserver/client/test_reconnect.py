"""The SDK's connections against a real worker: reconnect, resume, give up, truncation."""

from __future__ import annotations

import asyncio

import pytest

from tests.processes import eventually
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.relay import ChoppingRelay
from wsserver.client import Backoff, SessionClient, SessionClosed


async def test_refused_resume_reports_the_response_truncated(start_server: StartServer) -> None:
    server = await start_server(answer_tokens=1000, decode_rate=50)
    client = SessionClient(url_of(server), backoff=Backoff(base=0.05))
    await client.open()
    await client.create_response("long")
    while (await client.next_event(5))["type"] != "response.created":
        pass
    session_id = client.session_id
    assert session_id is not None
    # The session expires on the server while the client is away.
    client.drop_connection()
    server.sessions[session_id].end(remove_from_store=True)
    events = []
    with pytest.raises(SessionClosed):
        while True:
            events.append(await client.next_event(10))
    kinds = [e["type"] for e in events]
    assert "response.truncated" in kinds
    error = next(e for e in events if e["type"] == "error")
    assert error["code"] == "unknown_session"
    truncated = next(e for e in events if e["type"] == "response.truncated")
    assert truncated["response_id"] == "resp_1"
    with pytest.raises(SessionClosed):
        await client.send_text("anyone?")
    await client.close()


async def test_gives_up_after_backoff_when_the_server_is_gone(start_server: StartServer) -> None:
    server = await start_server(answer_tokens=1000, decode_rate=50)
    client = SessionClient(url_of(server), backoff=Backoff(base=0.01, max_attempts=3))
    await client.open()
    await client.create_response("long")
    while (await client.next_event(5))["type"] != "response.text.delta":
        pass
    await server.stop()
    events = []
    with pytest.raises(SessionClosed):
        while True:
            events.append(await client.next_event(10))
    assert events[-1]["type"] == "response.truncated"
    assert client.reconnects == 3
    await client.close()


async def test_many_drops_during_one_answer(start_server: StartServer) -> None:
    server = await start_server(answer_tokens=200, decode_rate=200)
    async with SessionClient(url_of(server)) as reference:
        expected = (await reference.ask("stormy")).text
    async with SessionClient(url_of(server), backoff=Backoff(base=0.01)) as client:
        await client.create_response("stormy")
        parts: list[str] = []
        seqs: list[int] = []
        while True:
            event = await client.next_event(10)
            seqs.append(event.get("seq", -1))
            if event["type"] == "response.text.delta":
                parts.append(event["delta"])
                if len(parts) % 25 == 0:
                    client.drop_connection()
                    await asyncio.sleep(0)
            if event["type"] == "response.done":
                break
        assert client.reconnects >= 3
    assert "".join(parts) == expected
    numbered = [s for s in seqs if s != -1]
    assert numbered == list(range(1, len(numbered) + 1))


async def test_silent_connection_is_detected_by_heartbeats_and_resumed(
    start_server: StartServer,
) -> None:
    server = await start_server(
        answer_tokens=300, decode_rate=300, heartbeat_interval=0.2, ping_interval=60
    )
    relay = ChoppingRelay(server.port, max_piece=4096)
    port = await relay.start()
    try:
        async with SessionClient(f"ws://127.0.0.1:{port}", backoff=Backoff(base=0.01)) as client:
            await client.create_response("half-open")
            parts: list[str] = []
            while True:
                event = await client.next_event(15)
                if event["type"] == "response.text.delta":
                    parts.append(event["delta"])
                    if len(parts) == 10:
                        relay.freeze()
                if event["type"] == "response.done":
                    break
            assert client.reconnects >= 1
        async with SessionClient(url_of(server)) as reference:
            assert "".join(parts) == (await reference.ask("half-open")).text
    finally:
        await relay.stop()


async def test_terminal_close_before_the_session_opens_is_not_retried(
    start_server: StartServer,
) -> None:
    server = await start_server(max_frame_bytes=1024)
    client = SessionClient(url_of(server), instructions="x" * 5000)
    with pytest.raises(SessionClosed):
        await client.open()
    assert client.close_code == 1009
    assert client.reconnects == 0


async def test_a_session_survives_any_number_of_drops_that_each_resume(
    start_server: StartServer,
) -> None:
    # A phone changing networks all day: every drop is followed by a successful resume,
    # so the attempt counter starts again each time and the session never gives up.
    server = await start_server(answer_tokens=5)
    relay = ChoppingRelay(server.port, max_piece=65536)
    port = await relay.start()
    client = SessionClient(f"ws://127.0.0.1:{port}", backoff=Backoff(base=0.01, max_attempts=2))
    try:
        await client.open()
        for drop in range(1, 25):
            relay.cut()
            await eventually(lambda n=drop: len(client.close_codes) == n)
            result = await client.ask(f"after drop {drop}")
            assert result.status == "completed", f"drop {drop}: {result.status} {result.reason}"
        assert client.close_codes == [1006] * 24
        assert client.reconnects == 24
    finally:
        await client.close()
        await relay.stop()
