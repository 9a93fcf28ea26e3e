"""The WorkerRegistry contract; the memory and the Redis registry both run this suite.

Each registry is paired with the session store whose owner leases it reads: the
memory store for the memory registry, a Redis store on the same Redis for the
Redis registry (one Redis, and a Redis Cluster).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

import pytest

from tests.wsserver.registry.worker_entries import info, until
from wsserver.registry.base import WorkerRegistry
from wsserver.registry.memory import MemoryWorkerRegistry
from wsserver.registry.redis import RedisWorkerRegistry
from wsserver.store.base import SessionRecord, SessionStore, StoreLimits, hash_token
from wsserver.store.memory import MemorySessionStore
from wsserver.store.redis import RedisSessionStore

LEASE_TTL = 0.3


@dataclass
class Deployment:
    """A registry and the store of the sessions whose owners it reports."""

    registry: WorkerRegistry
    store: SessionStore
    url: str | None
    """The Redis URL, for a second registry on the same data (None: memory)."""

    def with_ttl(self, ttl: float) -> WorkerRegistry:
        """Another registry of the same kind whose entries lapse after ``ttl`` seconds."""
        if self.url is None:
            return MemoryWorkerRegistry(ttl=ttl, sessions=self.store)
        return RedisWorkerRegistry(self.url, ttl=ttl)


@pytest.fixture(params=["memory", "redis", "cluster"])
async def deployment(request: pytest.FixtureRequest) -> AsyncIterator[Deployment]:
    limits = StoreLimits(lease_ttl=LEASE_TTL)
    if request.param == "memory":
        store: SessionStore = MemorySessionStore(limits)
        registry: WorkerRegistry = MemoryWorkerRegistry(ttl=60, sessions=store)
        url = None
    else:
        url = request.getfixturevalue(
            "redis_url" if request.param == "redis" else "redis_cluster_url"
        )
        store = RedisSessionStore(url, limits)
        registry = RedisWorkerRegistry(url, ttl=60)
    yield Deployment(registry, store, url)
    await registry.close()
    await store.close()


async def test_nothing_published_nothing_live(deployment: Deployment) -> None:
    assert await deployment.registry.live() == []


async def test_published_workers_are_live_sorted_by_id(deployment: Deployment) -> None:
    registry = deployment.registry
    a, b = info("a", sessions=3), info("b", draining=True)
    await registry.publish(b)
    await registry.publish(a)
    assert await registry.live() == [a, b]
    # Publishing again replaces the worker's entry (a heartbeat with new counts).
    await registry.publish(replace(a, sessions=4))
    assert [w.sessions for w in await registry.live()] == [4, 0]


async def test_an_entry_not_refreshed_lapses(deployment: Deployment) -> None:
    registry = deployment.with_ttl(0.2)
    try:
        await registry.publish(info("gone"))
        assert [w.worker_id for w in await registry.live()] == ["gone"]
        # No heartbeat: the entry lapses by itself, nobody withdraws it.
        await until(registry.live, lambda live: live == [])
    finally:
        await registry.close()


async def test_withdraw_removes_at_once(deployment: Deployment) -> None:
    registry = deployment.registry
    await registry.publish(info("a"))
    await registry.publish(info("b"))
    await registry.withdraw("a")
    assert [w.worker_id for w in await registry.live()] == ["b"]
    # Withdrawing twice, or a worker that never published, changes nothing.
    await registry.withdraw("a")
    await registry.withdraw("never")
    assert [w.worker_id for w in await registry.live()] == ["b"]


async def test_owner_of_follows_the_sessions_lease(deployment: Deployment) -> None:
    registry, store = deployment.registry, deployment.store
    assert await registry.owner_of("sess_never_existed") is None
    await store.create(SessionRecord("sess_1", hash_token("t"), 1.0, owner="worker-a"))
    assert await registry.owner_of("sess_1") == "worker-a"
    # A takeover moves the lease, and the registry reports the new owner.
    await store.claim("sess_1", "worker-b")
    assert await registry.owner_of("sess_1") == "worker-b"
    # Unrenewed, the lease lapses: nobody owns the session any more.
    await until(lambda: registry.owner_of("sess_1"), lambda owner: owner is None)
