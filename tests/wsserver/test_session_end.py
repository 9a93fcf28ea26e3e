"""Ended sessions leave the store, also when many end at once."""

from __future__ import annotations

import asyncio

import redis.asyncio as redis_asyncio

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
