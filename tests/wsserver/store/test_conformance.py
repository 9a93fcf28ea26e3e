"""The SessionStore contract; every implementation runs this suite."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from protocol.usage import Usage
from wsserver.store.base import (
    ResponseUsage,
    SessionRecord,
    SessionStore,
    hash_token,
    new_resume_token,
    token_matches,
)
from wsserver.store.memory import MemorySessionStore


@pytest.fixture(params=["memory"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[SessionStore]:
    implementation: SessionStore = MemorySessionStore()
    yield implementation
    await implementation.close()


def test_tokens_are_random_and_stored_as_hashes() -> None:
    tokens = {new_resume_token() for _ in range(100)}
    assert len(tokens) == 100
    token = tokens.pop()
    assert len(token) >= 32
    stored = hash_token(token)
    assert token not in stored
    assert token_matches(token, stored)
    assert not token_matches(token + "x", stored)


async def test_create_get_remove(store: SessionStore) -> None:
    record = SessionRecord("s1", hash_token("t"), 1.0)
    await store.create(record)
    got = await store.get("s1")
    assert got is not None and got.token_hash == hash_token("t")
    assert await store.get("nope") is None
    await store.remove("s1")
    assert await store.get("s1") is None
    assert await store.ready()


async def test_usage_ledger_sums_and_survives_removal(store: SessionStore) -> None:
    await store.create(SessionRecord("s1", hash_token("t"), 1.0))
    await store.record_usage("s1", ResponseUsage("resp_1", "completed", None, Usage(10, 5, 5)))
    await store.record_usage(
        "s1", ResponseUsage("resp_2", "interrupted", "client", Usage(20, 8, 3))
    )
    record = await store.get("s1")
    assert record is not None
    totals = record.totals()
    assert (totals.input_tokens, totals.output_tokens_generated) == (30, 13)
    assert totals.output_tokens_delivered == 8
    assert totals.output_tokens_wasted == 5
    await store.remove("s1")
    if isinstance(store, MemorySessionStore):
        ended = await store.usage_record("s1")
        assert ended is not None and len(ended.responses) == 2
