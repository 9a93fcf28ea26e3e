"""The SessionStore contract; the memory and the Redis store both run this suite."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from protocol.usage import Usage
from wsserver.store.base import (
    AppendBatch,
    ResponseUsage,
    SessionRecord,
    SessionStore,
    StoreLimits,
    hash_token,
    ledger_totals,
    new_resume_token,
    token_matches,
)
from wsserver.store.memory import MemorySessionStore
from wsserver.store.redis import RedisSessionStore

LIMITS = StoreLimits(
    log_max_events=5, log_max_bytes=1000, resume_window=0.4, session_ttl=30, lease_ttl=0.3
)


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[SessionStore]:
    implementation: SessionStore
    if request.param == "memory":
        implementation = MemorySessionStore(LIMITS)
    else:
        implementation = RedisSessionStore(request.getfixturevalue("redis_url"), LIMITS)
    yield implementation
    await implementation.close()


def _record(session_id: str = "s1") -> SessionRecord:
    return SessionRecord(
        session_id,
        hash_token("tok"),
        1.0,
        owner="worker-a",
        conversation={"turns": [["user", "hi"]]},
        stream={"last_seq": 0, "active": None},
    )


def _batch(
    session_id: str, epoch: int, seqs: range, *, owner: str = "worker-a", size: int = 10
) -> AppendBatch:
    return AppendBatch(
        session_id,
        epoch,
        owner,
        [(seq, bytes([seq % 256]) * size) for seq in seqs],
        {"last_seq": seqs[-1] if seqs else 0, "active": None},
    )


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
    await store.create(_record())
    got = await store.get("s1")
    assert got is not None
    assert got.token_hash == hash_token("tok")
    assert (got.epoch, got.owner, got.owner_live) == (1, "worker-a", True)
    assert got.conversation == {"turns": [["user", "hi"]]}
    assert await store.get("nope") is None
    await store.remove("s1", epoch=2)  # a stale owner cannot end it
    assert await store.get("s1") is not None
    await store.remove("s1", epoch=1)
    assert await store.get("s1") is None
    assert await store.ready()


async def test_append_and_read_log_after_a_seq(store: SessionStore) -> None:
    await store.create(_record())
    assert (await store.append([_batch("s1", 1, range(1, 4))])).stale == set()
    # A retried batch (same seqs) is not stored twice.
    assert (await store.append([_batch("s1", 1, range(2, 5))])).stale == set()
    log = await store.read_log("s1", 1)
    assert [seq for seq, _ in log.events] == [2, 3, 4]
    assert log.events[0][1] == bytes([2]) * 10
    assert log.first_seq == 1
    record = await store.get("s1")
    assert record is not None and record.stream["last_seq"] == 4


async def test_log_capped_by_count_and_bytes(store: SessionStore) -> None:
    await store.create(_record())
    await store.append([_batch("s1", 1, range(1, 9))])
    log = await store.read_log("s1", 0)
    assert [seq for seq, _ in log.events] == [4, 5, 6, 7, 8]
    assert log.first_seq == 4
    await store.append([_batch("s1", 1, range(9, 12), size=400)])
    log = await store.read_log("s1", 0)
    assert [seq for seq, _ in log.events] == [10, 11]


async def test_claim_bumps_the_epoch_and_fences_the_old_owner(store: SessionStore) -> None:
    await store.create(_record())
    claimed = await store.claim("s1", "worker-b")
    assert claimed is not None
    assert claimed.epoch == 2
    assert (claimed.owner, claimed.owner_live) == ("worker-a", True)
    assert (await store.append([_batch("s1", 1, range(1, 3))])).stale == {"s1"}
    assert (await store.renew([("s1", 1, "worker-a")])).stale == {"s1"}
    assert (await store.renew([("missing", 1, "worker-a")])).gone == {"missing"}
    result = await store.append([_batch("s1", 2, range(1, 3), owner="worker-b")])
    assert (result.stale, result.gone) == (set(), set())
    assert await store.claim("missing", "worker-b") is None
    # One stale session does not reject the others in the same call.
    await store.create(_record("s2"))
    result = await store.append(
        [_batch("s1", 1, range(3, 4)), _batch("s2", 1, range(1, 2)), _batch("s3", 1, range(1, 2))]
    )
    assert (result.stale, result.gone) == ({"s1"}, {"s3"})


async def test_lease_expires_without_renewal(store: SessionStore) -> None:
    await store.create(_record())
    await asyncio.sleep(LIMITS.lease_ttl + 0.2)
    record = await store.get("s1")
    assert record is not None and not record.owner_live
    claimed = await store.claim("s1", "worker-b")
    assert claimed is not None and not claimed.owner_live


async def test_log_expires_after_the_resume_window_but_the_record_stays(
    store: SessionStore,
) -> None:
    await store.create(_record())
    await store.append([_batch("s1", 1, range(1, 4))])
    await asyncio.sleep(LIMITS.resume_window + 0.3)
    log = await store.read_log("s1", 0)
    assert log.events == []
    assert log.first_seq == 4, "nothing after seq 3 is missing, everything before is gone"
    record = await store.get("s1")
    assert record is not None
    assert record.conversation == {"turns": [["user", "hi"]]}


async def test_renew_keeps_the_log(store: SessionStore) -> None:
    await store.create(_record())
    await store.append([_batch("s1", 1, range(1, 4))])
    for _ in range(4):
        await asyncio.sleep(LIMITS.resume_window / 2)
        assert (await store.renew([("s1", 1, "worker-a")])).stale == set()
    assert [seq for seq, _ in (await store.read_log("s1", 0)).events] == [1, 2, 3]


async def test_partial_text_and_conversation_updates(store: SessionStore) -> None:
    await store.create(_record())
    batch = _batch("s1", 1, range(1, 2))
    batch.partial_append = "Hello"
    batch.conversation = {"turns": [["user", "hi"], ["assistant", "x"]]}
    await store.append([batch])
    more = _batch("s1", 1, range(2, 3))
    more.partial_append = ", world"
    await store.append([more])
    record = await store.get("s1")
    assert record is not None
    assert record.partial_text == "Hello, world"
    assert record.conversation["turns"][-1] == ["assistant", "x"]
    reset = _batch("s1", 1, range(3, 4))
    reset.partial_reset = True
    reset.partial_append = "new"
    await store.append([reset])
    record = await store.get("s1")
    assert record is not None and record.partial_text == "new"


async def test_usage_ledger_sums_and_survives_removal(store: SessionStore) -> None:
    await store.create(_record())
    await store.record_usage("s1", ResponseUsage("resp_1", "completed", None, Usage(10, 5, 5)))
    await store.record_usage(
        "s1", ResponseUsage("resp_2", "interrupted", "client", Usage(20, 8, 3))
    )
    await store.remove("s1", 1)
    entries = await store.usage("s1")
    assert [e.response_id for e in entries] == ["resp_1", "resp_2"]
    assert entries[1].reason == "client"
    totals = ledger_totals(entries)
    assert (totals.input_tokens, totals.output_tokens_generated) == (30, 13)
    assert totals.output_tokens_delivered == 8
    assert totals.output_tokens_wasted == 5
    assert await store.usage("never") == []
