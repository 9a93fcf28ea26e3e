"""The SessionStore contract; the memory store and the Redis store (on one Redis and on a
Redis Cluster) all run this suite."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as redis_asyncio
from redis.crc import key_slot

from protocol.usage import Usage
from tests.redis_server import free_port
from wsserver.store.base import (
    AppendBatch,
    ResponseUsage,
    SessionRecord,
    SessionStore,
    SessionStoreUnavailable,
    StoreLimits,
    ToolCallRecord,
    ToolCallStatus,
    ToolResultOutcome,
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


def _open(request: pytest.FixtureRequest, limits: StoreLimits) -> SessionStore:
    if request.param == "memory":
        return MemorySessionStore(limits)
    url = request.getfixturevalue("redis_url" if request.param == "redis" else "redis_cluster_url")
    return RedisSessionStore(url, limits)


@pytest.fixture(params=["memory", "redis", "cluster"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[SessionStore]:
    implementation = _open(request, LIMITS)
    yield implementation
    await implementation.close()


@pytest.fixture(params=["memory", "redis", "cluster"])
async def short_lived_store(request: pytest.FixtureRequest) -> AsyncIterator[SessionStore]:
    """A store whose sessions expire within a second."""
    implementation = _open(request, StoreLimits(resume_window=0.2, session_ttl=0.4, lease_ttl=0.2))
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


async def test_acked_events_leave_the_log_and_free_its_bytes(store: SessionStore) -> None:
    """What the client acked goes from the stored log as from the replay buffer, so a
    takeover starts where the buffer does (a Realtime rebuild needs that quiet point)."""
    await store.create(_record())
    await store.append([_batch("s1", 1, range(1, 4), size=300)])
    acked = _batch("s1", 1, range(4, 5), size=300)
    acked.acked_seq = 2
    await store.append([acked])
    log = await store.read_log("s1", 0)
    assert ([seq for seq, _ in log.events], log.first_seq) == ([3, 4], 3)
    # Only the acked ones' bytes were freed: two more of 300 fit in the 1000, a third not.
    await store.append([_batch("s1", 1, range(5, 6), size=300)])
    assert [seq for seq, _ in (await store.read_log("s1", 0)).events] == [3, 4, 5]
    await store.append([_batch("s1", 1, range(6, 7), size=300)])
    assert [seq for seq, _ in (await store.read_log("s1", 0)).events] == [4, 5, 6]
    # An ack with no new event, or behind the log, changes nothing else.
    quiet = _batch("s1", 1, range(0), size=300)
    quiet.stream = {"last_seq": 6, "active": None}
    quiet.acked_seq = 5
    await store.append([quiet])
    log = await store.read_log("s1", 0)
    assert ([seq for seq, _ in log.events], log.first_seq) == ([6], 6)
    quiet.acked_seq = 1
    await store.append([quiet])
    assert [seq for seq, _ in (await store.read_log("s1", 0)).events] == [6]


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


async def test_redis_renewal_refreshes_the_other_ttls_every_quarter_window(
    any_redis_url: str,
) -> None:
    """Every renewal sets the lease; the log's and record's TTLs only every quarter of
    the resume window (two commands per session instead of up to eight)."""
    store = RedisSessionStore(any_redis_url, StoreLimits(resume_window=4.0, lease_ttl=1.0))
    log, lease = "wss:{s1}:log", "wss:{s1}:lease"
    try:
        await store.create(_record())
        await store.append([_batch("s1", 1, range(1, 3))])
        # The resume window and the time to the next refresh: a crashed owner's log
        # lives the whole window after its last renewal.
        assert 4000 < await store.redis.pttl(log) <= 5000
        await store.redis.pexpire(log, 1500)
        assert (await store.renew([("s1", 1, "worker-a")])).stale == set()
        assert await store.redis.pttl(log) > 3000, "the first renewal refreshes every TTL"
        await store.redis.pexpire(log, 1500)
        await store.redis.pexpire(lease, 100)
        assert (await store.renew([("s1", 1, "worker-a")])).stale == set()
        assert await store.redis.pttl(log) <= 1500, "a renewal right after sets the lease only"
        assert await store.redis.pttl(lease) > 500
        await asyncio.sleep(1.0)  # a quarter of the resume window
        assert (await store.renew([("s1", 1, "worker-a")])).stale == set()
        assert await store.redis.pttl(log) > 3000
        # A stale owner's light renewal is refused like a full one.
        assert (await store.renew([("s1", 2, "worker-b")])).stale == {"s1"}
        # A takeover starts every TTL again: the new owner's renewals may be light.
        await store.redis.pexpire(log, 500)
        assert await store.claim("s1", "worker-b") is not None
        assert await store.redis.pttl(log) > 3000
    finally:
        await store.close()


async def test_redis_renewal_that_failed_to_refresh_refreshes_on_the_next(
    redis_url: str,
) -> None:
    """A full refresh that did not reach Redis does not count: the next renewal does it."""
    store = RedisSessionStore(redis_url, StoreLimits(resume_window=4.0, lease_ttl=1.0), timeout=0.3)
    log = "wss:{s1}:log"
    try:
        await store.create(_record())
        await store.append([_batch("s1", 1, range(1, 3))])
        await store.renew([("s1", 1, "worker-a")])  # the first: full
        await asyncio.sleep(1.0)  # a quarter of the window: the next renewal is full
        async with redis_asyncio.Redis.from_url(redis_url) as admin:
            await admin.execute_command("CLIENT", "PAUSE", 600, "ALL")
        with pytest.raises(SessionStoreUnavailable):
            await store.renew([("s1", 1, "worker-a")])
        await asyncio.sleep(0.4)  # the pause ends
        await store.redis.pexpire(log, 1500)
        assert (await store.renew([("s1", 1, "worker-a")])).stale == set()
        assert await store.redis.pttl(log) > 3000
    finally:
        await store.close()


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


async def _partial(store: SessionStore, *, events: range, text: str, offset: int) -> str:
    batch = _batch("s1", 1, events)
    batch.partial_reset, batch.partial_append, batch.partial_offset = offset == 0, text, offset
    await store.append([batch])
    record = await store.get("s1")
    assert record is not None
    return record.partial_text


async def test_a_batch_sent_again_places_its_text_once(store: SessionStore) -> None:
    await store.create(_record())
    assert await _partial(store, events=range(1, 3), text="né", offset=0) == "né"
    # Its first try was applied but unanswered (a cluster node failed): sent again...
    assert await _partial(store, events=range(3, 5), text="-ab", offset=3) == "né-ab"
    assert await _partial(store, events=range(3, 5), text="-ab", offset=3) == "né-ab"
    # ... or sent again with the events that came since.
    assert await _partial(store, events=range(3, 7), text="-abcd", offset=3) == "né-abcd"
    # The store lost text before the offset (a failover): the true prefix stays.
    assert await _partial(store, events=range(9, 10), text="zz", offset=20) == "né-abcd"
    # A reset starts over, however often it is sent.
    assert await _partial(store, events=range(10, 11), text="new", offset=0) == "new"
    assert await _partial(store, events=range(10, 12), text="newer", offset=0) == "newer"


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


def _call(call_id: str, *, arguments: str = '{"city": "Zürich"}') -> ToolCallRecord:
    return ToolCallRecord(call_id, "resp_1", "get_weather", arguments, created_at=1712345678.123456)


def test_tool_call_record_round_trips_through_a_dict() -> None:
    record = ToolCallRecord(
        "c1", "r1", "f", "{}", ToolCallStatus.COMPLETED, "42", None, 1712345678.123456
    )
    assert ToolCallRecord.from_dict(record.to_dict()) == record
    assert record.to_dict()["status"] == "completed"


async def test_tool_calls_are_listed_in_the_order_added(store: SessionStore) -> None:
    await store.create(_record())
    assert await store.tool_calls("s1") == []
    await store.add_tool_calls("s1", [_call("c2"), _call("c1")])
    await store.add_tool_calls("s1", [_call("c0", arguments='{"q": "a \\\\"quoted\\\\" /x"}')])
    calls = await store.tool_calls("s1")
    assert [call.call_id for call in calls] == ["c2", "c1", "c0"]
    assert calls[0] == _call("c2"), "every field round-trips, created_at to the microsecond"
    assert calls[2].arguments == '{"q": "a \\\\"quoted\\\\" /x"}'
    assert {call.status for call in calls} == {ToolCallStatus.PENDING}


async def test_adding_a_call_again_changes_nothing(store: SessionStore) -> None:
    await store.create(_record())
    await store.add_tool_calls("s1", [_call("c1"), _call("c2")])
    outcome, _ = await store.apply_tool_result("s1", "c1", "sunny", None)
    assert outcome is ToolResultOutcome.APPLIED
    # Re-sent after a reconnect or by a new owner: no reset, no reorder, no new arguments.
    await store.add_tool_calls(
        "s1", [_call("c3"), _call("c1", arguments="{}"), _call("c2", arguments="{}")]
    )
    # The status of an added record is not taken: a call starts pending.
    await store.add_tool_calls(
        "s1", [ToolCallRecord("c4", "resp_1", "f", "{}", ToolCallStatus.COMPLETED, "forged")]
    )
    calls = await store.tool_calls("s1")
    assert [call.call_id for call in calls] == ["c1", "c2", "c3", "c4"]
    assert (calls[0].status, calls[0].output, calls[0].arguments) == (
        ToolCallStatus.COMPLETED,
        "sunny",
        _call("c1").arguments,
    )
    assert calls[1] == _call("c2")
    assert (calls[3].status, calls[3].output) == (ToolCallStatus.PENDING, None)


async def test_a_result_is_applied_once(store: SessionStore) -> None:
    await store.create(_record())
    await store.add_tool_calls("s1", [_call("c1"), _call("c2")])
    outcome, record = await store.apply_tool_result("s1", "c1", '{"temp": 21}', None)
    assert outcome is ToolResultOutcome.APPLIED
    assert record == ToolCallRecord(
        "c1",
        "resp_1",
        "get_weather",
        _call("c1").arguments,
        ToolCallStatus.COMPLETED,
        '{"temp": 21}',
        None,
        1712345678.123456,
    )
    outcome, again = await store.apply_tool_result("s1", "c1", "different", "boom")
    assert outcome is ToolResultOutcome.DUPLICATE
    assert again == record, "the first result stands"
    outcome, failed = await store.apply_tool_result("s1", "c2", None, "tool crashed")
    assert outcome is ToolResultOutcome.APPLIED
    assert failed is not None and (failed.output, failed.error) == (None, "tool crashed")
    assert await store.tool_calls("s1") == [record, failed]


async def test_results_for_unknown_calls(store: SessionStore) -> None:
    await store.create(_record())
    await store.add_tool_calls("s1", [_call("c1")])
    assert await store.apply_tool_result("s1", "nope", "x", None) == (
        ToolResultOutcome.UNKNOWN,
        None,
    )
    assert await store.apply_tool_result("other", "c1", "x", None) == (
        ToolResultOutcome.UNKNOWN,
        None,
    )
    assert not await store.close_tool_call("s1", "nope", ToolCallStatus.CANCELLED)
    assert [call.status for call in await store.tool_calls("s1")] == [ToolCallStatus.PENDING]


async def test_a_closed_call_takes_no_result(store: SessionStore) -> None:
    await store.create(_record())
    await store.add_tool_calls("s1", [_call("c1"), _call("c2"), _call("c3")])
    assert await store.close_tool_call("s1", "c1", ToolCallStatus.TIMED_OUT)
    assert not await store.close_tool_call("s1", "c1", ToolCallStatus.CANCELLED)
    outcome, record = await store.apply_tool_result("s1", "c1", "late", None)
    assert outcome is ToolResultOutcome.CLOSED
    assert record is not None
    assert (record.status, record.output, record.error) == (ToolCallStatus.TIMED_OUT, None, None)
    assert await store.close_tool_call("s1", "c2", ToolCallStatus.CANCELLED)
    await store.apply_tool_result("s1", "c3", "done", None)
    assert not await store.close_tool_call("s1", "c3", ToolCallStatus.CANCELLED)
    with pytest.raises(ValueError, match="timed_out or cancelled"):
        await store.close_tool_call("s1", "c3", ToolCallStatus.COMPLETED)
    statuses = [(call.status, call.output) for call in await store.tool_calls("s1")]
    assert statuses == [
        (ToolCallStatus.TIMED_OUT, None),
        (ToolCallStatus.CANCELLED, None),
        (ToolCallStatus.COMPLETED, "done"),
    ]


async def test_the_tool_ledger_goes_with_the_session(store: SessionStore) -> None:
    await store.create(_record())
    await store.add_tool_calls("s1", [_call("c1")])
    await store.remove("s1", epoch=2)  # a stale owner cannot end it
    assert len(await store.tool_calls("s1")) == 1
    await store.remove("s1", epoch=1)
    assert await store.tool_calls("s1") == []
    assert (await store.apply_tool_result("s1", "c1", "x", None))[0] is ToolResultOutcome.UNKNOWN
    # A session that is gone records no calls.
    await store.add_tool_calls("s1", [_call("c2")])
    assert await store.tool_calls("s1") == []
    # Ended by its last batch.
    await store.create(_record("s2"))
    await store.add_tool_calls("s2", [_call("c1")])
    batch = _batch("s2", 1, range(1, 2))
    batch.remove = True
    await store.append([batch])
    assert await store.tool_calls("s2") == []


async def test_the_tool_ledger_expires_with_the_session(short_lived_store: SessionStore) -> None:
    store = short_lived_store
    await store.create(_record())
    await store.add_tool_calls("s1", [_call("c1")])
    await asyncio.sleep(0.6)
    assert await store.tool_calls("s1") == []
    assert (await store.apply_tool_result("s1", "c1", "x", None))[0] is ToolResultOutcome.UNKNOWN
    if isinstance(store, RedisSessionStore):
        assert await store.redis.exists("wss:{s1}:tools") == 0


async def test_racing_results_apply_exactly_once(store: SessionStore) -> None:
    await store.create(_record())
    await store.add_tool_calls("s1", [_call("c1"), _call("c2")])
    results = await asyncio.gather(
        *(store.apply_tool_result("s1", "c1", f"out-{i}", None) for i in range(20))
    )
    outcomes = [outcome for outcome, _ in results]
    assert outcomes.count(ToolResultOutcome.APPLIED) == 1
    assert outcomes.count(ToolResultOutcome.DUPLICATE) == 19
    winner = results[outcomes.index(ToolResultOutcome.APPLIED)][1]
    assert all(record == winner for _, record in results)
    assert (await store.tool_calls("s1"))[0] == winner
    # A result racing a timeout: one of them ends the call.
    applied, closed = await asyncio.gather(
        store.apply_tool_result("s1", "c2", "late?", None),
        store.close_tool_call("s1", "c2", ToolCallStatus.TIMED_OUT),
    )
    assert (applied[0] is ToolResultOutcome.APPLIED) != closed


async def test_workers_racing_on_redis_apply_exactly_once(any_redis_url: str) -> None:
    # After a failover two workers (separate clients) may both get the re-sent result.
    # Forty connections open at once: a connect timeout far above the 0.5 s default, so a
    # loaded machine (parallel test processes) cannot fail the race for the wrong reason.
    first, second = (RedisSessionStore(any_redis_url, LIMITS, timeout=10) for _ in range(2))
    try:
        await first.create(_record())
        await first.add_tool_calls("s1", [_call("c1")])
        await second.add_tool_calls("s1", [_call("c1")])
        results = await asyncio.gather(
            *(
                (first if i % 2 else second).apply_tool_result("s1", "c1", f"out-{i}", None)
                for i in range(40)
            )
        )
        outcomes = [outcome for outcome, _ in results]
        assert outcomes.count(ToolResultOutcome.APPLIED) == 1
        assert outcomes.count(ToolResultOutcome.DUPLICATE) == 39
        assert len({record for _, record in results}) == 1
    finally:
        await first.close()
        await second.close()


async def test_redis_tool_ledger_keys(any_redis_url: str) -> None:
    store = RedisSessionStore(any_redis_url, LIMITS)
    try:
        await store.create(_record())
        key = "wss:{s1}:tools"
        assert await store.redis.exists(key) == 0
        await store.add_tool_calls("s1", [_call("c1"), _call("c2")])
        # The session TTL, and the time to the next refresh (a quarter of the resume window).
        ttl_ms = (LIMITS.session_ttl + LIMITS.resume_window / 4) * 1000
        assert ttl_ms - 1000 < await store.redis.pttl(key) <= ttl_ms
        # Records and ledger share a slot, so the scripts run on Redis Cluster.
        assert key_slot(key.encode()) == key_slot(b"wss:{s1}:meta")
        # The ledger's TTL follows the record's: refreshed by renewals and writes.
        await store.redis.pexpire(key, 5000)
        assert (await store.renew([("s1", 1, "worker-a")])).stale == set()
        assert await store.redis.pttl(key) > ttl_ms - 1000
        await store.redis.pexpire(key, 5000)
        await store.append([_batch("s1", 1, range(1, 2))])
        assert await store.redis.pttl(key) > ttl_ms - 1000
        await store.redis.pexpire(key, 5000)
        assert await store.claim("s1", "worker-b") is not None
        assert await store.redis.pttl(key) > ttl_ms - 1000
        await store.redis.pexpire(key, 5000)
        await store.apply_tool_result("s1", "c1", "x", None)
        assert await store.redis.pttl(key) > ttl_ms - 1000
        await store.remove("s1", 2)
        assert await store.redis.exists(key) == 0
        # Nothing is written for a session that is gone.
        await store.add_tool_calls("s1", [_call("c3")])
        assert await store.redis.exists(key) == 0
    finally:
        await store.close()


async def test_redis_tool_ledger_reports_an_unreachable_store() -> None:
    store = RedisSessionStore(f"redis://127.0.0.1:{free_port()}/0", LIMITS, timeout=0.2)
    try:
        with pytest.raises(SessionStoreUnavailable):
            await store.add_tool_calls("s1", [_call("c1")])
        with pytest.raises(SessionStoreUnavailable):
            await store.apply_tool_result("s1", "c1", "x", None)
        with pytest.raises(SessionStoreUnavailable):
            await store.close_tool_call("s1", "c1", ToolCallStatus.CANCELLED)
        with pytest.raises(SessionStoreUnavailable):
            await store.tool_calls("s1")
    finally:
        await store.close()


async def test_redis_usage_written_twice_counts_once(any_redis_url: str) -> None:
    store = RedisSessionStore(any_redis_url, LIMITS)
    try:
        await store.create(_record())
        entry = ResponseUsage("resp_1", "completed", None, Usage(input_tokens=3))
        batch = _batch("s1", 1, range(1, 2))
        batch.usage = [entry]
        await store.append([batch])
        await store.append([batch])  # its first answer lost: sent again
        await store.record_usage("s1", ResponseUsage("resp_2", "failed", "x", Usage()))
        assert [e.response_id for e in await store.usage("s1")] == ["resp_1", "resp_2"]
    finally:
        await store.close()


def _running(batch: AppendBatch, response_id: str) -> AppendBatch:
    """``batch`` with its stream snapshot showing ``response_id`` running."""
    batch.stream = {**batch.stream, "active": {"response_id": response_id}}
    return batch


async def test_a_stale_owners_usage_is_dropped_and_a_gone_sessions_kept(
    store: SessionStore,
) -> None:
    # The new owner ends the response the store saw running and records its usage:
    # the fenced owner's entry for it would count the response twice.
    await store.create(_record())
    assert not (await store.append([_running(_batch("s1", 1, range(1, 2)), "resp_1")])).stale
    assert await store.claim("s1", "worker-b") is not None
    stale = _batch("s1", 1, range(2, 3))
    stale.usage = [ResponseUsage("resp_1", "completed", None, Usage(10, 5, 5))]
    assert (await store.append([stale])).stale == {"s1"}
    owned = _batch("s1", 2, range(2, 3), owner="worker-b")
    owned.usage = [ResponseUsage("resp_1", "failed", "session_moved", Usage(0, 4, 4))]
    assert (await store.append([owned])).stale == set()
    assert [(e.response_id, e.status) for e in await store.usage("s1")] == [("resp_1", "failed")]
    # Sent again after the new owner's entry landed: still counted once.
    assert (await store.append([stale])).stale == {"s1"}
    assert [(e.response_id, e.status) for e in await store.usage("s1")] == [("resp_1", "failed")]
    gone = _batch("never-stored", 1, range(1, 2))
    gone.usage = [ResponseUsage("resp_9", "incomplete", "session_expired", Usage(1, 1, 0))]
    assert (await store.append([gone])).gone == {"never-stored"}
    assert [e.response_id for e in await store.usage("never-stored")] == ["resp_9"]


async def test_a_stale_owners_usage_of_a_response_its_successor_never_saw_is_kept(
    store: SessionStore,
) -> None:
    # resp_1 ran and ended on the old owner before any write of it landed: the new
    # owner's claim saw nothing running, so the old owner's late entry is its only record.
    await store.create(_record())
    assert await store.claim("s1", "worker-b") is not None
    late = _batch("s1", 1, range(1, 3))
    late.usage = [ResponseUsage("resp_1", "completed", None, Usage(10, 5, 5))]
    assert (await store.append([late])).stale == {"s1"}
    assert (await store.append([late])).stale == {"s1"}  # sent again: kept once
    assert [(e.response_id, e.status) for e in await store.usage("s1")] == [("resp_1", "completed")]


async def test_an_owner_fenced_before_the_removal_finds_its_writes_stale(
    store: SessionStore,
) -> None:
    # B took the session over and ended it (removed). A, fenced off but not yet told,
    # must hear "stale" (and stop), not "gone" (and write the session back).
    await store.create(_record())
    assert not (await store.append([_running(_batch("s1", 1, range(1, 2)), "resp_1")])).stale
    assert await store.claim("s1", "worker-b") is not None
    # B ended the response it found running, recorded it, and ended the session.
    await store.record_usage("s1", ResponseUsage("resp_1", "failed", "session_moved", Usage()))
    await store.remove("s1", 2)
    late = _batch("s1", 1, range(2, 4))
    late.usage = [ResponseUsage("resp_1", "completed", None, Usage(10, 5, 5))]
    assert (await store.append([late])).stale == {"s1"}
    assert (await store.renew([("s1", 1, "worker-a")])).stale == {"s1"}
    assert await store.get("s1") is None
    assert [(e.response_id, e.status) for e in await store.usage("s1")] == [("resp_1", "failed")]
    # A response B never saw has A's entry only: kept, after the removal too.
    unseen = _batch("s1", 1, range(4, 5))
    unseen.usage = [ResponseUsage("resp_2", "completed", None, Usage(1, 1, 1))]
    assert (await store.append([unseen])).stale == {"s1"}
    assert [e.response_id for e in await store.usage("s1")] == ["resp_1", "resp_2"]
    # The remover's own late batch (its answer lost, sent again) finds it gone.
    assert (await store.append([_batch("s1", 2, range(1, 3))])).gone == {"s1"}
