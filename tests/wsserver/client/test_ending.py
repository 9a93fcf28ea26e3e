"""``SessionClient.close()`` ends the session on the server, also between connections."""

from __future__ import annotations

from tests.processes import eventually
from tests.wsserver.conftest import StartServer
from tests.wsserver.relay import ChoppingRelay
from wsserver.client import Backoff, SessionClient


async def test_close_while_reconnecting_ends_the_session_and_its_response(
    start_server: StartServer,
) -> None:
    # Long grace and resume window: only the close can end them within the test.
    server = await start_server(
        answer_tokens=100_000, decode_rate=50, grace_period=120, resume_window=300
    )
    relay = ChoppingRelay(server.port, max_piece=65536)
    port = await relay.start()
    client = SessionClient(
        f"ws://127.0.0.1:{port}", backoff=Backoff(base=0.01, cap=0.05, max_attempts=10_000)
    )
    try:
        await client.open()
        session_id = client.session_id
        assert session_id is not None
        await client.create_response("a very long answer")
        while (await client.next_event(10))["type"] != "response.text.delta":
            pass
        # The network goes away: the client keeps trying, the server keeps generating.
        relay.refusing = True
        relay.cut()

        def detached_while_retrying() -> bool:
            runtime = server.sessions.get(session_id)
            return runtime is not None and runtime.transport is None and client.reconnects >= 2

        await eventually(detached_while_retrying)
        assert server.engine.stats()["running"] == 1
        # The network is back, and the app closes before the client reconnected by itself.
        relay.refusing = False
        await client.close()
        await eventually(
            lambda: session_id not in server.sessions and server.engine.stats()["running"] == 0,
            timeout=10,
        )
        # Usage reaches the store with the next batch.
        await server.persister.flush()
        ledger = await server.store.usage(session_id)
        assert [(e.status, e.reason) for e in ledger] == [("cancelled", "client_closed")]
    finally:
        await client.close()
        await relay.stop()


async def test_close_while_connected_ends_the_session_and_its_response(
    start_server: StartServer,
) -> None:
    server = await start_server(answer_tokens=100_000, decode_rate=50, grace_period=120)
    client = SessionClient(f"ws://127.0.0.1:{server.port}")
    await client.open()
    session_id = client.session_id
    await client.create_response("a very long answer")
    while (await client.next_event(10))["type"] != "response.text.delta":
        pass
    await client.close()
    await eventually(
        lambda: session_id not in server.sessions and server.engine.stats()["running"] == 0,
        timeout=10,
    )
