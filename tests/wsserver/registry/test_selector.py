"""The registry selector: the store's URL names the registry too."""

from __future__ import annotations

import pytest

from wsserver.registry.base import RegistryError, UnknownRegistry
from wsserver.registry.memory import MemoryWorkerRegistry
from wsserver.registry.redis import RedisWorkerRegistry
from wsserver.registry.selector import open_registry
from wsserver.store.memory import MemorySessionStore


async def test_memory_needs_the_in_process_store() -> None:
    registry = open_registry("memory", ttl=9.0, sessions=MemorySessionStore())
    assert isinstance(registry, MemoryWorkerRegistry)
    assert registry.ttl == 9.0
    # A router runs apart from the workers: an in-process registry would be empty.
    with pytest.raises(UnknownRegistry, match="memory registry serves one process"):
        open_registry("memory")


async def test_redis_urls_open_the_redis_registry() -> None:
    registry = open_registry("redis://127.0.0.1:1/0", ttl=3.0)
    try:
        assert isinstance(registry, RedisWorkerRegistry)
        assert registry.ttl == 3.0
    finally:
        await registry.close()


def test_an_unknown_url_is_refused() -> None:
    with pytest.raises(UnknownRegistry, match="unknown registry 'etcd://x'") as refused:
        open_registry("etcd://x")
    assert isinstance(refused.value, RegistryError)


async def test_cluster_urls_open_the_redis_registry() -> None:
    registry = open_registry("redis+cluster://127.0.0.1:1")
    try:
        assert isinstance(registry, RedisWorkerRegistry)
        assert registry.client.cluster
    finally:
        await registry.close()
    with pytest.raises(UnknownRegistry, match="bad redis cluster url"):
        open_registry("redis+cluster://127.0.0.1")
