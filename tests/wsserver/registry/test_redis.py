"""The worker registry against a real Redis; rendezvous hashing as a pure function."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import TypeVar

import pytest

from tests.processes import WorkerProcess
from tests.redis_server import free_port
from tests.wsserver.wire import RawClient
from wsserver.registry.redis import (
    WORKERS_KEY,
    RegistryUnavailable,
    WorkerInfo,
    WorkerRegistry,
    placement_order,
    rendezvous_order,
    worker_key,
)

T = TypeVar("T")


def info(worker_id: str, **fields: object) -> WorkerInfo:
    base = WorkerInfo(worker_id, f"ws://127.0.0.1:{9000 + len(worker_id)}", 0, 0, False, 1.0)
    return replace(base, **fields)  # type: ignore[arg-type]


async def until(
    read: Callable[[], Awaitable[T]], done: Callable[[T], bool], timeout: float = 10.0
) -> None:
    """Poll ``read()`` until ``done`` holds; fail after ``timeout`` (a bound, not a measure)."""
    deadline = time.monotonic() + timeout
    while not done(await read()):
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


@pytest.fixture
async def registry(redis_url: str) -> AsyncIterator[WorkerRegistry]:
    registry = WorkerRegistry(redis_url, ttl=60)
    yield registry
    await registry.close()


def test_worker_info_round_trips_through_json() -> None:
    worker = WorkerInfo("w-1", "ws://10.0.0.7:8765", 100, 42, True, time.time())
    assert WorkerInfo.from_json(worker.to_json()) == worker
    assert worker.address == ("10.0.0.7", 8765)
    assert not worker.full and replace(worker, sessions=100).full
    assert not replace(worker, capacity=0, sessions=10**6).full, "0 means unlimited"
    with pytest.raises(ValueError, match="invalid worker info"):
        WorkerInfo.from_json('{"worker_id": "x"}')


async def test_published_workers_are_live(registry: WorkerRegistry) -> None:
    a, b = info("a", sessions=3), info("b", draining=True)
    await registry.publish(b)
    await registry.publish(a)
    assert await registry.live() == [a, b]
    # Publishing again replaces the worker's entry (a heartbeat with new counts).
    await registry.publish(replace(a, sessions=4))
    assert [w.sessions for w in await registry.live()] == [4, 0]


async def test_expired_worker_drops_out_and_is_pruned(redis_url: str) -> None:
    short = WorkerRegistry(redis_url, ttl=0.2)
    steady = WorkerRegistry(redis_url, ttl=60)
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


async def test_withdraw_removes_at_once(registry: WorkerRegistry) -> None:
    await registry.publish(info("a"))
    await registry.publish(info("b"))
    await registry.withdraw("a")
    assert [w.worker_id for w in await registry.live()] == ["b"]
    assert await registry.redis.smembers(WORKERS_KEY) == {b"b"}


async def test_foreign_value_is_skipped(registry: WorkerRegistry) -> None:
    await registry.publish(info("a"))
    await registry.redis.set(worker_key("junk"), b"not json")
    await registry.redis.sadd(WORKERS_KEY, "junk")
    assert [w.worker_id for w in await registry.live()] == ["a"]


async def test_redis_down_is_registry_unavailable() -> None:
    registry = WorkerRegistry(f"redis://127.0.0.1:{free_port()}/0", timeout=0.2)
    try:
        with pytest.raises(RegistryUnavailable, match="redis"):
            await registry.live()
        with pytest.raises(RegistryUnavailable):
            await registry.owner_of("sess_x")
    finally:
        await registry.close()


async def test_owner_of_reads_the_lease_of_a_real_session(
    registry: WorkerRegistry, redis_url: str
) -> None:
    worker = WorkerProcess("--store", redis_url, name="owner-a").start()
    try:
        client = await RawClient.connect(worker.url)
        ready = await client.start()
        assert await registry.owner_of(ready["session_id"]) == "owner-a"
        assert await registry.owner_of("sess_never_existed") is None
        await client.close()
    finally:
        worker.stop()


def test_rendezvous_order_is_deterministic() -> None:
    workers = [info(f"w{i}") for i in range(5)]
    first = rendezvous_order("sess_abc", workers)
    assert rendezvous_order("sess_abc", list(reversed(workers))) == first
    assert sorted(w.worker_id for w in first) == [w.worker_id for w in workers]
    # Different keys rank differently (otherwise every session lands on one worker).
    assert len({rendezvous_order(f"k{i}", workers)[0].worker_id for i in range(100)}) == 5


def test_removing_a_worker_moves_only_its_keys() -> None:
    workers = [info(f"w{i}") for i in range(5)]
    keys = [f"sess_{i}" for i in range(2000)]
    before = {key: rendezvous_order(key, workers)[0].worker_id for key in keys}
    survivors = [w for w in workers if w.worker_id != "w2"]
    after = {key: rendezvous_order(key, survivors)[0].worker_id for key in keys}
    moved = {key for key in keys if before[key] != after[key]}
    assert moved == {key for key in keys if before[key] == "w2"}
    # ...and each moved key goes to its second choice, so they spread, not pile up.
    for key in moved:
        assert after[key] == rendezvous_order(key, workers)[1].worker_id
    assert len({after[key] for key in moved}) == 4


def test_placement_order() -> None:
    a, b, c = info("a"), info("b"), info("c")
    ranked = rendezvous_order("sess_k", [a, b, c])
    assert placement_order("sess_k", [a, b, c]) == ranked
    # The live owner goes first, whatever its rank.
    last = ranked[-1]
    assert placement_order("sess_k", [a, b, c], owner=last.worker_id)[0] == last
    # An owner that is not live (not in the list) changes nothing.
    assert placement_order("sess_k", [a, b, c], owner="gone") == ranked
    # Draining workers never take a connection, not even as the owner.
    draining = replace(ranked[0], draining=True)
    others = [w for w in ranked if w is not ranked[0]]
    assert placement_order("sess_k", [draining, *others], owner=draining.worker_id) == others
    # Full workers are tried after every worker with room.
    full = replace(ranked[0], capacity=2, sessions=2)
    assert placement_order("sess_k", [full, *others]) == [*others, full]


async def test_a_cancelled_loop_of_registry_calls_ends(registry: WorkerRegistry) -> None:
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
