"""Application heartbeats and dead-peer detection with WebSocket pings."""

from __future__ import annotations

from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient, wait_until


async def test_heartbeat_events_flow_with_last_seq(start_server: StartServer) -> None:
    server = await start_server(heartbeat_interval=0.1)
    client = await RawClient.connect(url_of(server))
    ready = await client.start()
    assert ready["heartbeat_interval_ms"] == 100
    first = await client.until("heartbeat", timeout=5)
    second = await client.until("heartbeat", timeout=5)
    assert "seq" not in first, "heartbeats are connection messages, never replayed"
    assert first["last_seq"] == second["last_seq"] == 0
    assert second["server_time_ms"] >= first["server_time_ms"]
    await client.close()


async def test_peer_that_stops_answering_pings_is_detached(start_server: StartServer) -> None:
    server = await start_server(
        ping_interval=0.1, ping_timeout=0.2, close_timeout=0.2, grace_period=60
    )
    client = await RawClient.connect(url_of(server), ping_interval=None)
    session_id = (await client.start())["session_id"]
    runtime = server.sessions[session_id]
    assert runtime.transport is not None
    # A half-open peer: nothing it receives is read, so no pong comes back.
    client.ws.transport.pause_reading()
    await wait_until(lambda: runtime.transport is None, timeout=10)
    assert session_id in server.sessions, "a dead peer detaches; the session stays resumable"
    client.abort()


async def test_a_silent_client_is_found_by_its_missing_acks_and_its_tokens_are_not_acknowledged(
    start_server: StartServer,
) -> None:
    # Pings every minute: only the ack stall detector can find this client in time.
    server = await start_server(
        ping_interval=60,
        ping_timeout=60,
        ack_timeout=0.5,
        ack_window=16,
        grace_period=0.2,
        answer_tokens=2000,
        max_output_tokens=2000,
        decode_rate=200,
    )
    client = await RawClient.connect(url_of(server), ping_interval=None)
    ready = await client.start()
    runtime = server.sessions[ready["session_id"]]
    await client.send({"type": "response.create", "input": "talk to me"})
    while len([m for m in client.seen if m["type"] == "response.text.delta"]) < 10:
        await client.recv()
    acked = client.seen[-1]["seq"]
    await client.send({"type": "ack", "seq": acked})
    # Gone silent, TCP open: the kernel takes what the worker writes, nobody reads it.
    client.ws.transport.pause_reading()
    await wait_until(lambda: runtime.transport is None, timeout=20)
    response = runtime.session.last_response or runtime.session.active
    assert response is not None
    await wait_until(lambda: runtime.session.active is None, timeout=20)
    await wait_until(lambda: bool(runtime.journal.usage) or response.usage_recorded)
    usage = response.usage()
    assert response.status is not None and response.status.value == "incomplete"
    assert usage.output_tokens_generated < 2000, "the engine stopped well before the answer's end"
    assert usage.output_tokens_delivered > usage.output_tokens_acknowledged
    # Every token of the acked events, and nothing written after them.
    assert 10 <= usage.output_tokens_acknowledged <= acked
    client.abort()
