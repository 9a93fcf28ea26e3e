"""The store's front-door duties, on both stores: the session's principal, and the count
of sessions each client token opened."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.wsserver.store.test_conformance import _open, _record
from wsserver.store.base import RESUME_TOKEN_PREFIX, SessionStore, StoreLimits, new_resume_token


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[SessionStore]:
    opened = _open(request, StoreLimits())
    yield opened
    await opened.close()


async def test_the_principal_is_kept_and_survives_a_takeover(store: SessionStore) -> None:
    record = _record()
    record.principal = "alice"
    await store.create(record)
    got = await store.get("s1")
    assert got is not None and got.principal == "alice"
    claimed = await store.claim("s1", "worker-b")
    assert claimed is not None and claimed.principal == "alice"


async def test_records_without_a_principal_are_anonymous(store: SessionStore) -> None:
    await store.create(_record())
    got = await store.get("s1")
    assert got is not None and got.principal == "anonymous"


async def test_a_client_token_opens_at_most_its_limit(store: SessionStore) -> None:
    assert await store.use_client_token("tok-a", 2, ttl=60)
    assert await store.use_client_token("tok-a", 2, ttl=60)
    assert not await store.use_client_token("tok-a", 2, ttl=60)
    assert not await store.use_client_token("tok-a", 2, ttl=60)  # a refusal counts nothing
    assert await store.use_client_token("tok-b", 1, ttl=60)  # per token
    assert not await store.use_client_token("tok-c", 0, ttl=60)


async def test_racing_workers_open_exactly_the_limit(store: SessionStore) -> None:
    results = await asyncio.gather(*(store.use_client_token("tok", 3, ttl=60) for _ in range(20)))
    assert sum(results) == 3


async def test_the_count_goes_with_the_token(redis_url: str) -> None:
    from wsserver.store.redis import RedisSessionStore

    store = RedisSessionStore(redis_url)
    try:
        assert await store.use_client_token("tok", 1, ttl=30)
        ttl_ms = await store.redis.pttl("wss:token:{tok}:sessions")
        assert 0 < ttl_ms <= 30_000
    finally:
        await store.close()


def test_resume_tokens_carry_a_prefix_for_redaction() -> None:
    token = new_resume_token()
    assert token.startswith(RESUME_TOKEN_PREFIX) and len(token) > 40
