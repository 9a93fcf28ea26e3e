"""WebSocket pings from a client: answered within a cap, a flood closed with 4005."""

from __future__ import annotations

import asyncio

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.wsserver.conftest import StartServer, url_of


async def test_a_ping_flood_is_closed_4005_and_the_pongs_stop(start_server: StartServer) -> None:
    server = await start_server(max_pings_per_second=5, max_ping_burst=20)
    async with connect(url_of(server), ping_interval=None) as ws:
        sent = 0
        try:
            for sent in range(1, 10_001):  # noqa: B007
                await ws.ping()
        except ConnectionClosed:
            pass
        try:
            await asyncio.wait_for(ws.wait_closed(), 10)
        finally:
            assert ws.close_code == 4005, (ws.close_code, sent)


async def test_pings_within_the_cap_and_heartbeat_pongs_never_close(
    start_server: StartServer,
) -> None:
    # The server pings every 50 ms: the client's answers to them are not counted.
    server = await start_server(max_pings_per_second=5, max_ping_burst=5, ping_interval=0.05)
    async with connect(url_of(server), ping_interval=None) as ws:
        for _ in range(8):
            pong = await ws.ping()
            await asyncio.wait_for(pong, 5)
            await asyncio.sleep(0.25)
        assert ws.close_code is None
