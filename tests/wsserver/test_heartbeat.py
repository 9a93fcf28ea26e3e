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
    assert runtime.connection is not None
    # A half-open peer: nothing it receives is read, so no pong comes back.
    client.ws.transport.pause_reading()
    await wait_until(lambda: runtime.connection is None, timeout=10)
    assert session_id in server.sessions, "a dead peer detaches; the session stays resumable"
    client.abort()
