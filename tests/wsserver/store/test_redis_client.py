"""The Redis client's connection limit, against a real Redis and a real Redis Cluster."""

from __future__ import annotations

import asyncio

import pytest
import redis

from wsserver.store.base import SessionStoreUnavailable
from wsserver.store.redis_client import RedisClient, connection_name
from wsserver.store.urls import cluster_seeds


def _named_connections(url: str, name: str) -> list[int]:
    """Connections called ``name`` on each node (one entry for a single Redis)."""
    if url.startswith("redis+cluster://"):
        nodes = [redis.Redis(host=h, port=p) for h, p in cluster_seeds(url)]
    else:
        nodes = [redis.Redis.from_url(url)]
    counts = []
    for node in nodes:
        with node:
            counts.append(sum(1 for c in node.client_list() if c["name"] == name))
    return counts


async def _burst(client: RedisClient, calls: int) -> None:
    """``calls`` commands at once, over keys every node serves."""
    await asyncio.gather(
        *(client.call(lambda i=i: client.redis.set(f"k{i}", i)) for i in range(calls))
    )


async def test_calls_past_the_limit_wait_and_connections_stay_within_it(
    any_redis_url: str,
) -> None:
    free = RedisClient(any_redis_url, timeout=5, unavailable=SessionStoreUnavailable, name="free")
    capped = RedisClient(
        any_redis_url,
        timeout=5,
        unavailable=SessionStoreUnavailable,
        max_connections=3,
        name="capped",
    )
    try:
        await _burst(free, 200)
        await _burst(capped, 200)
        unbounded = _named_connections(any_redis_url, "free")
        bounded = _named_connections(any_redis_url, "capped")
    finally:
        await free.close()
        await capped.close()
    # The same burst without a limit opens more than three somewhere (the baseline).
    assert max(unbounded) > 3, unbounded
    assert 1 <= max(bounded) <= 3, bounded
    assert capped.round_trips == 200


async def test_a_call_that_finds_every_connection_busy_fails_within_the_timeout() -> None:
    # Nothing here reaches Redis: the operations are ours.
    client = RedisClient(
        "redis://127.0.0.1:1/0", timeout=0.2, unavailable=SessionStoreUnavailable, max_connections=1
    )
    held = asyncio.Event()
    release = asyncio.Event()

    async def hold() -> str:
        held.set()
        await release.wait()
        return "held"

    async def quick() -> str:
        return "quick"

    holder = asyncio.create_task(client.call(hold))
    await held.wait()
    with pytest.raises(SessionStoreUnavailable, match=r"all 1 connections busy for 0\.2 s"):
        await client.call(quick)
    # A waiter cancelled while waiting takes no connection with it.
    waiter = asyncio.create_task(client.call(quick))
    await asyncio.sleep(0.05)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    release.set()
    assert await holder == "held"
    assert await client.call(quick) == "quick"
    assert await asyncio.gather(*(client.call(quick) for _ in range(5))) == ["quick"] * 5
    await client.close()


async def test_a_worker_id_redis_would_refuse_still_names_the_connections(
    redis_url: str,
) -> None:
    assert connection_name("wsserver-store:host 1\n\u00e9") == "wsserver-store:host_1__"
    assert connection_name("") is None and len(connection_name("x" * 100) or "") == 64
    client = RedisClient(
        redis_url, timeout=2, unavailable=SessionStoreUnavailable, name="wsserver-store:a b"
    )
    try:
        assert await client.call(client.redis.ping)
        assert _named_connections(redis_url, "wsserver-store:a_b") == [1]
    finally:
        await client.close()


async def test_a_cluster_client_takes_a_burst_of_calls_before_it_knows_the_slots(
    redis_cluster_url: str,
) -> None:
    """A fresh client, and one after a failure (slots read again): 50 calls at once all
    succeed (redis-py alone failed them with "Connection closed by server")."""
    client = RedisClient(redis_cluster_url, timeout=5, unavailable=SessionStoreUnavailable)
    try:
        await _burst(client, 50)
        client._remap()  # what a failed call does
        await _burst(client, 50)
        assert client.round_trips == 100
    finally:
        await client.close()
