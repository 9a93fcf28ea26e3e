"""What only the Redis registry does: its keys, pruning, a Redis that is down, and the
lease of a real worker's session. The shared contract is in ``test_conformance.py``."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from tests.processes import WorkerProcess
from tests.redis_server import free_port
from tests.wsserver.registry.worker_entries import info, until
from tests.wsserver.wire import RawClient
from wsserver.registry.base import RegistryUnavailable
from wsserver.registry.redis import WORKERS_KEY, RedisWorkerRegistry, worker_key
from wsserver.store.redis_layout import lease_key


@pytest.fixture
async def registry(any_redis_url: str) -> AsyncIterator[RedisWorkerRegistry]:
    registry = RedisWorkerRegistry(any_redis_url, ttl=60)
    yield registry
    await registry.close()


async def test_expired_worker_drops_out_and_is_pruned(any_redis_url: str) -> None:
    short = RedisWorkerRegistry(any_redis_url, ttl=0.2)
    steady = RedisWorkerRegistry(any_redis_url, ttl=60)
    try:
        await short.publish(info("gone"))
        await steady.publish(info("stays"))
        assert {w.worker_id for w in await steady.live()} == {"gone", "stays"}
        # No heartbeat: its key expires, and the next read removes it from the set.
        await until(lambda: steady.live(), lambda live: [w.worker_id for w in live] == ["stays"])
        assert await steady.redis.smembers(WORKERS_KEY) == {b"stays"}
    finally:
        await short.close()
        await steady.close()


async def test_withdraw_removes_at_once(registry: RedisWorkerRegistry) -> None:
    await registry.publish(info("a"))
    await registry.publish(info("b"))
    await registry.withdraw("a")
    assert [w.worker_id for w in await registry.live()] == ["b"]
    assert await registry.redis.smembers(WORKERS_KEY) == {b"b"}


async def test_foreign_value_is_skipped(registry: RedisWorkerRegistry) -> None:
    await registry.publish(info("a"))
    await registry.redis.set(worker_key("junk"), b"not json")
    await registry.redis.sadd(WORKERS_KEY, "junk")
    assert [w.worker_id for w in await registry.live()] == ["a"]


async def test_keys_that_are_not_utf8_name_no_worker(registry: RedisWorkerRegistry) -> None:
    await registry.publish(info("a"))
    await registry.redis.sadd(WORKERS_KEY, b"\xff\xfe")
    assert [w.worker_id for w in await registry.live()] == ["a"]
    await registry.redis.set(lease_key("sess_damaged"), b"\xff\xfe")
    # Read, never raised: an owner that is no live worker, so placement hashes.
    owner = await registry.owner_of("sess_damaged")
    assert owner is not None and owner not in {"a"}
    # A lease key of another type is the registry's failure, which placement survives.
    await registry.redis.delete(lease_key("sess_damaged"))
    await registry.redis.hset(lease_key("sess_damaged"), "x", "y")
    with pytest.raises(RegistryUnavailable):
        await registry.owner_of("sess_damaged")


async def test_redis_down_is_registry_unavailable() -> None:
    registry = RedisWorkerRegistry(f"redis://127.0.0.1:{free_port()}/0", timeout=0.2)
    try:
        with pytest.raises(RegistryUnavailable, match="redis"):
            await registry.live()
        with pytest.raises(RegistryUnavailable):
            await registry.owner_of("sess_x")
    finally:
        await registry.close()


async def test_owner_of_reads_the_lease_of_a_real_session(
    registry: RedisWorkerRegistry, any_redis_url: str
) -> None:
    worker = WorkerProcess("--store", any_redis_url, name="owner-a").start()
    try:
        client = await RawClient.connect(worker.url)
        ready = await client.start()
        assert await registry.owner_of(ready["session_id"]) == "owner-a"
        assert await registry.owner_of("sess_never_existed") is None
        await client.close()
    finally:
        worker.stop()


async def test_a_cancelled_loop_of_registry_calls_ends(registry: RedisWorkerRegistry) -> None:
    """redis-py may swallow a cancel mid-command; the registry must hand it back."""
    await registry.publish(info("a"))
    rng = random.Random(7)

    async def poll_forever() -> None:
        while True:
            await registry.live()
            await registry.owner_of("sess_x")

    for _ in range(100):
        task = asyncio.create_task(poll_forever())
        await asyncio.sleep(rng.random() * 0.003)
        task.cancel()
        # A bound on a hang, not a measurement: a swallowed cancel would loop forever.
        done, _ = await asyncio.wait({task}, timeout=10)
        assert done and task.cancelled(), "the cancel was lost"
