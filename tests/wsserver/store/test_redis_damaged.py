"""The Redis store over damaged keys (another version's layout, a half write, a mistake).

Every read of a damaged record says so (``StoredDataUnreadable``) instead of raising
whatever its parser hit; a damaged ledger entry is left out, not the whole ledger; and
one session's damaged keys fail that session's writes only, in a batch of many, on one
Redis and on a Redis Cluster.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from protocol.usage import Usage
from wsserver.store.base import (
    AppendBatch,
    ResponseUsage,
    SessionRecord,
    StoredDataUnreadable,
    StoreLimits,
    ToolCallRecord,
    ToolCallStatus,
    ToolResultOutcome,
    hash_token,
)
from wsserver.store.redis import RedisSessionStore
from wsserver.store.redis_layout import session_keys, usage_key


@pytest.fixture
async def store(any_redis_url: str) -> AsyncIterator[RedisSessionStore]:
    implementation = RedisSessionStore(any_redis_url, StoreLimits())
    yield implementation
    await implementation.close()


@pytest.fixture
def raw(store: RedisSessionStore) -> Any:
    """The store's own Redis (or Cluster) client, to damage keys with."""
    return store.redis


def _record(session_id: str) -> SessionRecord:
    return SessionRecord(
        session_id,
        hash_token("tok"),
        1.0,
        owner="worker-a",
        conversation={"turns": [["user", "hi"]]},
        stream={"last_seq": 0, "active": None},
    )


def _batch(session_id: str, seqs: range) -> AppendBatch:
    return AppendBatch(
        session_id,
        1,
        "worker-a",
        [(seq, b"event-%d" % seq) for seq in seqs],
        {"last_seq": seqs[-1], "active": None},
    )


META_DAMAGE = {
    "conversation not JSON": ("conversation", b"{not json"),
    "conversation not an object": ("conversation", b"[]"),
    "stream not JSON": ("stream", b"nope"),
    "conversation nested too deep": ("conversation", b"[" * 100_000 + b"]" * 100_000),
    "epoch not a number": ("epoch", b"abc"),
    "epoch not whole": ("epoch", b"1.5"),
    "created_at not a number": ("created_at", b"yesterday"),
    "token hash not UTF-8": ("token_hash", b"\xff\xfe"),
    "principal not UTF-8": ("principal", b"\xff\xfe"),
}


@pytest.mark.parametrize("damage", sorted(META_DAMAGE))
async def test_a_damaged_record_reads_as_unreadable(
    damage: str, store: RedisSessionStore, raw: Any
) -> None:
    await store.create(_record("d1"))
    field, value = META_DAMAGE[damage]
    meta, *_ = session_keys("d1")
    await raw.hset(meta, field, value)
    with pytest.raises(StoredDataUnreadable):
        await store.get("d1")
    with pytest.raises(StoredDataUnreadable):
        await store.claim("d1", "worker-b")


async def test_a_record_without_its_token_hash_or_with_bad_partial_text_is_unreadable(
    store: RedisSessionStore, raw: Any
) -> None:
    await store.create(_record("d2"))
    meta, _log, partial, *_ = session_keys("d2")
    await raw.set(partial, b"\xff\xfe\xfd")
    with pytest.raises(StoredDataUnreadable):
        await store.get("d2")
    await raw.delete(partial)
    assert await store.get("d2") is not None
    await raw.hdel(meta, "token_hash")
    with pytest.raises(StoredDataUnreadable):
        await store.get("d2")


@pytest.mark.parametrize("key", ["meta is a string", "partial text is a hash"])
async def test_a_record_key_of_another_type_is_unreadable_not_unavailable(
    key: str, store: RedisSessionStore, raw: Any
) -> None:
    await store.create(_record("d6"))
    meta, _log, partial, *_ = session_keys("d6")
    if key == "meta is a string":
        await raw.delete(meta)
        await raw.set(meta, "oops")
    else:
        await raw.hset(partial, "x", "y")
    # Asked again, Redis answers the same: never a "try again later".
    with pytest.raises(StoredDataUnreadable):
        await store.get("d6")
    with pytest.raises(StoredDataUnreadable):
        await store.claim("d6", "worker-b")


async def test_a_log_key_of_another_type_or_a_damaged_stream_snapshot_is_unreadable(
    store: RedisSessionStore, raw: Any
) -> None:
    await store.create(_record("d7"))
    meta, log, *_ = session_keys("d7")
    await raw.set(log, "oops")
    with pytest.raises(StoredDataUnreadable):
        await store.read_log("d7", 0)
    await raw.delete(log)
    assert (await store.read_log("d7", 0)).first_seq == 1  # an empty log, as created
    # An empty log's first seq comes from the stream snapshot: it must read back too.
    for damaged in (b"{not json", b"[]", b'{"last_seq": "many"}'):
        await raw.hset(meta, "stream", damaged)
        with pytest.raises(StoredDataUnreadable):
            await store.read_log("d7", 0)


def _call(call_id: str) -> ToolCallRecord:
    return ToolCallRecord(call_id, "resp_1", "get_weather", '{"city": "Paris"}')


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("c:{id}", b"[1,{not json"),
        ("c:{id}", b'"x"'),
        ("c:{id}", b'["x", {}]'),
        ("r:{id}", b"{bad"),
        ("r:{id}", b'{"status": "exploded"}'),
        # JSON, but a field of another type: the entry's reader checks them all.
        ("c:{id}", b'[1,{"call_id":"call_b","response_id":"r","name":5,"arguments":"{}"}]'),
        ("c:{id}", b'[1,{"call_id":"call_b","response_id":"r","name":"w","arguments":{}}]'),
        ("r:{id}", b'{"status":"completed","output":5}'),
        ("r:{id}", b'{"status":"completed","output":null,"error":["x"]}'),
        # An order that is no whole number (int() of infinity is an OverflowError).
        ("c:{id}", b'[1e400,{"call_id":"call_b","response_id":"r","name":"w","arguments":"{}"}]'),
        ("c:{id}", b"[-Infinity,{}]"),
        # A creation time no float holds, or no finite one.
        (
            "c:{id}",
            b'[1,{"call_id":"call_b","response_id":"r","name":"w","arguments":"{}",'
            b'"created_at":' + b"9" * 400 + b"}]",
        ),
        (
            "c:{id}",
            b'[1,{"call_id":"call_b","response_id":"r","name":"w","arguments":"{}",'
            b'"created_at":1e400}]',
        ),
        ("c:{id}", b'[1.5,{"call_id":"call_b","response_id":"r","name":"w","arguments":"{}"}]'),
    ],
)
async def test_a_damaged_tool_call_is_left_out_of_the_ledger_alone(
    field: str, value: bytes, store: RedisSessionStore, raw: Any
) -> None:
    await store.create(_record("d3"))
    await store.add_tool_calls("d3", [_call("call_a"), _call("call_b"), _call("call_c")])
    *_, tools = session_keys("d3")
    await raw.hset(tools, field.format(id="call_b"), value)
    assert [c.call_id for c in await store.tool_calls("d3")] == ["call_a", "call_c"]


async def test_a_result_for_a_damaged_tool_call_gets_an_answer(
    store: RedisSessionStore, raw: Any
) -> None:
    await store.create(_record("d4"))
    await store.add_tool_calls("d4", [_call("call_a"), _call("call_b")])
    *_, tools = session_keys("d4")
    await raw.hset(tools, "c:call_a", b"[1,{not json")
    # The result is written (the script settles it), though the call does not read back.
    assert await store.apply_tool_result("d4", "call_a", '"8C"', None) == (
        ToolResultOutcome.APPLIED,
        None,
    )
    assert await store.apply_tool_result("d4", "call_a", '"8C"', None) == (
        ToolResultOutcome.CLOSED,
        None,
    )
    assert await store.close_tool_call("d4", "call_b", ToolCallStatus.TIMED_OUT)


async def test_a_damaged_usage_entry_is_left_out_of_the_ledger_alone(
    store: RedisSessionStore, raw: Any
) -> None:
    entry = ResponseUsage("resp_1", "completed", None, Usage(3, 5, 5))
    await store.record_usage("d5", entry)
    await raw.rpush(usage_key("d5"), b"{bad", b'{"response_id": "r"}', b"[]")
    wrong = b'{"response_id":"r","status":"completed","reason":null,"usage":{"input_tokens":"5"}}'
    deep = b'{"usage":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    # A count of 4300 digits parses, but a sum of two of them no longer prints.
    huge = b'{"response_id":"r","status":"completed","reason":null,"usage":{"input_tokens":'
    await raw.rpush(usage_key("d5"), wrong, deep, b"\xff", huge + b"9" * 4300 + b"}}")
    assert await store.usage("d5") == [entry]


@pytest.mark.parametrize("ledger", ["usage", "tool calls"])
async def test_a_ledger_key_of_another_type_is_unreadable_not_unavailable(
    ledger: str, store: RedisSessionStore, raw: Any
) -> None:
    await store.create(_record("d8"))
    if ledger == "usage":
        await raw.set(usage_key("d8"), "oops")
        read = store.usage
    else:
        *_, tools = session_keys("d8")
        await raw.set(tools, "oops")
        read = store.tool_calls  # type: ignore[assignment]
    # Asked again, Redis answers the same: the reader must not wait for the store.
    for _ in range(2):
        with pytest.raises(StoredDataUnreadable):
            await read("d8")


@pytest.mark.parametrize(
    "damage",
    ["meta is a string", "log is a string", "usage is a string", "log_bytes not a number"],
)
async def test_one_sessions_damaged_keys_refuse_its_writes_only(
    damage: str, store: RedisSessionStore, raw: Any
) -> None:
    ids = ["healthy-1", "damaged", "healthy-2"]
    for session_id in ids:
        await store.create(_record(session_id))
    meta, log, *_ = session_keys("damaged")
    if damage == "meta is a string":
        await raw.delete(meta)
        await raw.set(meta, "oops")
    elif damage == "log is a string":
        await raw.set(log, "oops")
    elif damage == "usage is a string":
        await raw.set(usage_key("damaged"), "oops")
    else:
        await raw.hset(meta, "log_bytes", "lots")
    batches = [_batch(session_id, range(1, 4)) for session_id in ids]
    batches[1].usage = [ResponseUsage("resp_1", "completed", None, Usage(1, 1, 1))]
    result = await store.append(batches)
    assert set(result.refused) == {"damaged"}
    assert not (result.unwritten or result.stale or result.gone)
    for session_id in ("healthy-1", "healthy-2"):
        stored = await store.read_log(session_id, 0)
        assert [seq for seq, _ in stored.events] == [1, 2, 3]
        record = await store.get(session_id)
        assert record is not None and json.loads(json.dumps(record.stream))["last_seq"] == 3


async def _slot_map_reads(store: RedisSessionStore) -> int:
    """How often the cluster's nodes were asked for the slot map, all told (older
    servers count every CLUSTER subcommand as one; nothing else here sends one)."""
    total = 0
    for node in store.redis.get_nodes():
        stats = await store.redis.info("commandstats", target_nodes=node)
        total += sum(
            value["calls"]
            for name, value in stats.items()
            if name in ("cmdstat_cluster", "cmdstat_cluster|slots", "cmdstat_cluster|shards")
        )
    return total


async def test_a_damaged_key_leaves_the_cluster_clients_slot_map_alone(
    redis_cluster_url: str,
) -> None:
    # A key of the wrong type says nothing of the cluster's topology: reading it again
    # and again must not make the client read the slot map again (each reading builds
    # node objects anew, the old ones' connections left to be collected).
    store = RedisSessionStore(redis_cluster_url, StoreLimits())
    try:
        await store.create(_record("d8"))
        _meta, log, *_ = session_keys("d8")
        await store.redis.set(log, "oops")
        before = await _slot_map_reads(store)
        for _ in range(5):
            with pytest.raises(StoredDataUnreadable):
                await store.read_log("d8", 0)
            assert await store.get("d8") is not None
        assert await _slot_map_reads(store) == before
    finally:
        await store.close()


async def test_a_foreign_log_entry_never_takes_the_byte_count_below_zero(
    store: RedisSessionStore, raw: Any
) -> None:
    """An entry the store never counted (written by hand, or by another version) that an
    ack or the bounds trim away: the log's byte count stays at zero or more, so the byte
    bound still holds the log."""
    await store.create(_record("s1"))
    meta, log, *_ = session_keys("s1")
    await raw.xadd(log, {"q": "zz", "p": b"x" * 500}, id="1-0")
    await raw.xadd(log, {"other": b"y" * 500}, id="2-0")
    batch = _batch("s1", range(3, 5))
    batch.acked_seq = 2
    assert not (await store.append([batch])).refused
    assert int(await raw.hget(meta, "log_bytes")) == sum(
        len(payload) for _, payload in batch.events
    )
    assert [seq for seq, _ in (await store.read_log("s1", 0)).events] == [3, 4]
