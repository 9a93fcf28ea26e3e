"""The Redis client's connection limit, against a real Redis and a real Redis Cluster."""

from __future__ import annotations

import asyncio
import os
import time

import psutil
import pytest
import redis

from wsserver.store.base import SessionStoreUnavailable
from wsserver.store.redis_client import RedisClient
from wsserver.store.urls import cluster_seeds


def node_ports(url: str) -> list[int]:
    """The port of each node (one for a single Redis)."""
    if url.startswith("redis+cluster://"):
        return [port for _host, port in cluster_seeds(url)]
    return [redis.Redis.from_url(url).connection_pool.connection_kwargs["port"]]


def connections_to(pid: int, ports: list[int]) -> list[int]:
    """The process's established TCP connections to each of ``ports``."""
    found = [
        c.raddr.port
        for c in psutil.Process(pid).net_connections(kind="tcp")
        if c.raddr and c.status == psutil.CONN_ESTABLISHED
    ]
    return [found.count(port) for port in ports]


async def _burst(client: RedisClient, calls: int) -> None:
    """``calls`` commands at once, over keys every node serves."""
    await asyncio.gather(
        *(client.call(lambda i=i: client.redis.set(f"k{i}", i), f"k{i}") for i in range(calls))
    )


async def test_calls_past_the_limit_wait_and_connections_stay_within_it(
    any_redis_url: str,
) -> None:
    ports = node_ports(any_redis_url)
    free = RedisClient(any_redis_url, timeout=5, unavailable=SessionStoreUnavailable)
    try:
        await _burst(free, 200)
        # The same burst opens more than three somewhere without a limit (the baseline).
        unbounded = connections_to(os.getpid(), ports)
    finally:
        await free.close()
    capped = RedisClient(
        any_redis_url, timeout=5, unavailable=SessionStoreUnavailable, max_connections=3
    )
    try:
        await _burst(capped, 200)
        bounded = connections_to(os.getpid(), ports)
    finally:
        await capped.close()
    # A cluster client also keeps the connection it read the slot map on, to a seed.
    extra = 1 if any_redis_url.startswith("redis+cluster://") else 0
    assert max(unbounded) > 3 + extra, unbounded
    assert 1 <= max(bounded) <= 3 + extra, bounded
    assert capped.round_trips == 200


async def test_a_stalled_node_holds_only_its_own_calls(redis_cluster_url: str) -> None:
    """Calls stuck on a paused primary take none of the healthy primaries' connections."""
    client = RedisClient(
        redis_cluster_url, timeout=1.0, unavailable=SessionStoreUnavailable, max_connections=2
    )
    try:
        await client.call(client.redis.ping)  # the slot map
        assert isinstance(client.redis, redis.asyncio.RedisCluster)
        nodes = {f"k{i}": client.redis.get_node_from_key(f"k{i}") for i in range(50)}
        stalled = nodes["k0"]
        assert stalled is not None
        healthy = [key for key, node in nodes.items() if node and node.name != stalled.name]
        with redis.Redis(host=stalled.host, port=stalled.port) as admin:
            admin.execute_command("CLIENT", "PAUSE", 2000, "ALL")
        stuck = [
            asyncio.create_task(client.call(lambda: client.redis.get("k0"), "k0")) for _ in range(2)
        ]
        await asyncio.sleep(0.05)
        began = time.monotonic()
        await asyncio.gather(
            *(client.call(lambda k=k: client.redis.set(k, 1), k) for k in healthy[:20])
        )
        # Sharing one limit, they would wait for the stuck calls' timeout (1 s).
        assert time.monotonic() - began < 0.5, "healthy calls waited for the stalled node's"
        for task in stuck:
            with pytest.raises(SessionStoreUnavailable):
                await task
    finally:
        await asyncio.sleep(1.0)  # the pause ends: the shared cluster serves the next test
        await client.close()


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

    holder = asyncio.create_task(client.call(hold, "k"))
    await held.wait()
    with pytest.raises(SessionStoreUnavailable, match=r"all 1 connections busy for 0\.2 s"):
        await client.call(quick, "k")
    # A call without a key (a health check) waits for none.
    assert await client.call(quick) == "quick"
    # A waiter cancelled while waiting takes no connection with it.
    waiter = asyncio.create_task(client.call(quick, "k"))
    await asyncio.sleep(0.05)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    release.set()
    assert await holder == "held"
    assert await asyncio.gather(*(client.call(quick, "k") for _ in range(5))) == ["quick"] * 5
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
