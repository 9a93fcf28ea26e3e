"""The store selector: a URL names the session store."""

from __future__ import annotations

import pytest

from wsserver.store.base import SessionStoreError, StoreLimits, UnknownStore
from wsserver.store.memory import MemorySessionStore
from wsserver.store.redis import RedisSessionStore
from wsserver.store.selector import open_store


async def test_memory_and_redis_urls() -> None:
    assert isinstance(open_store("memory", StoreLimits()), MemorySessionStore)
    store = open_store("redis://127.0.0.1:1/0", StoreLimits())
    try:
        assert isinstance(store, RedisSessionStore)
    finally:
        await store.close()


def test_an_unknown_url_is_refused() -> None:
    with pytest.raises(UnknownStore, match="unknown store 'mongodb://x'") as refused:
        open_store("mongodb://x", StoreLimits())
    assert isinstance(refused.value, SessionStoreError)


async def test_cluster_urls_name_seed_nodes() -> None:
    store = open_store("redis+cluster://127.0.0.1:1,127.0.0.1:2", StoreLimits())
    try:
        assert isinstance(store, RedisSessionStore)
        assert store.client.cluster
        assert sorted(store.redis.nodes_manager.startup_nodes) == [
            "127.0.0.1:1",
            "127.0.0.1:2",
        ]
    finally:
        await store.close()
    for bad in ("redis+cluster://", "redis+cluster://host", "redis+cluster://h:1,:2"):
        with pytest.raises(UnknownStore, match="bad redis cluster url"):
            open_store(bad, StoreLimits())
