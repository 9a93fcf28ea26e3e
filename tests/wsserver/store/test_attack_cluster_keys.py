"""Attacks on the cluster key layout with session ids a client may send (on resume).

Every session key is ``wss:{ID}:...``: an id holding ``{`` or ``}`` changes which part of
the key Redis Cluster hashes (``}x`` leaves an empty tag, so each key hashes whole, on
its own slot). The store must still answer "no such session", not fail the call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from wsserver.registry.redis import RedisWorkerRegistry
from wsserver.store.base import StoreLimits
from wsserver.store.redis import RedisSessionStore

HOSTILE_IDS = ["}x", "{x}", "a}b{c", "{}", "x}:meta", "{registry}"]


@pytest.fixture
async def store(redis_cluster_url: str) -> AsyncIterator[RedisSessionStore]:
    opened = RedisSessionStore(redis_cluster_url, StoreLimits())
    yield opened
    await opened.close()


@pytest.mark.parametrize("session_id", HOSTILE_IDS)
async def test_a_hostile_session_id_is_an_unknown_session(
    store: RedisSessionStore, session_id: str
) -> None:
    assert await store.get(session_id) is None
    assert await store.claim(session_id, "worker-a") is None
    assert (await store.renew([(session_id, 1, "worker-a")])).gone == {session_id}


async def test_a_hostile_session_id_has_no_owner(redis_cluster_url: str) -> None:
    registry = RedisWorkerRegistry(redis_cluster_url, ttl=5)
    try:
        for session_id in HOSTILE_IDS:
            assert await registry.owner_of(session_id) is None
    finally:
        await registry.close()
