"""``--store-max-connections``: a burst of sessions on a worker, and its Redis connections."""

from __future__ import annotations

import asyncio

import redis

from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient
from wsserver.worker.server import WorkerServer


def _store_connections(redis_url: str, worker: WorkerServer) -> int:
    with redis.Redis.from_url(redis_url) as admin:
        name = f"wsserver-store:{worker.worker_id}"
        return sum(1 for c in admin.client_list() if c["name"] == name)


async def _burst(worker: WorkerServer, sessions: int) -> None:
    """``sessions`` clients start at once, each asks an answer, and every answer ends."""

    async def one() -> str:
        client = await RawClient.connect(url_of(worker))
        await client.start()
        await client.send({"type": "response.create", "input": "hi"})
        done = await client.until("response.done")
        await client.close()
        return str(done["status"])

    assert await asyncio.gather(*(one() for _ in range(sessions))) == ["completed"] * sessions


async def test_a_burst_of_sessions_keeps_within_the_limit(
    start_server: StartServer, redis_url: str
) -> None:
    unlimited = await start_server(store=redis_url, store_max_connections=0, answer_tokens=5)
    limited = await start_server(store=redis_url, store_max_connections=2, answer_tokens=5)
    await _burst(unlimited, 40)
    await _burst(limited, 40)
    # The same burst opens more than two without a limit (the baseline).
    assert _store_connections(redis_url, unlimited) > 2
    assert 1 <= _store_connections(redis_url, limited) <= 2
