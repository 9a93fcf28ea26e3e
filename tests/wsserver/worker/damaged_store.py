"""Worker tests over a damaged Redis store: what damages it, and what they read back.

The two workers are the ``workers`` fixture of this folder's conftest."""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as redis

from tests.wsserver.wire import RawClient
from wsserver.store.base import StoreLimits
from wsserver.store.redis_layout import session_keys
from wsserver.store.selector import open_store


async def answered_on(url: str, redis_url: str) -> tuple[dict[str, Any], list[int]]:
    """A session with one whole answer, every event of it in the store; its ready and
    seqs. Its connection is then cut (its owner keeps it)."""
    client = await RawClient.connect(url)
    ready = await client.start()
    await client.send({"type": "response.create", "input": "hello"})
    done = await client.until("response.done")
    assert done["status"] == "completed"
    seqs = [m["seq"] for m in client.seen if "seq" in m]
    store = open_store(redis_url, StoreLimits())
    try:
        for _ in range(500):  # written in the owner's batches
            stored = await store.read_log(ready["session_id"], 0)
            if stored.events and stored.events[-1][0] == done["seq"]:
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the answer never reached the store")
    finally:
        await store.close()
    client.abort()
    return ready, seqs


async def damage_log_entry(
    redis_url: str, session_id: str, seq: int, fields: dict[bytes, bytes]
) -> None:
    """Replace entry ``seq`` of the session's log with ``fields`` (ids must grow, so the
    stream is rewritten whole, with its TTL)."""
    _meta, log_key, *_ = session_keys(session_id)
    client = redis.Redis.from_url(redis_url)
    try:
        ttl = await client.pttl(log_key)
        entries = await client.xrange(log_key)
        async with client.pipeline(transaction=True) as pipe:
            pipe.delete(log_key)
            for entry_id, entry_fields in entries:
                replaced = fields if entry_id == f"{seq}-0".encode() else entry_fields
                pipe.xadd(log_key, replaced, id=entry_id)  # type: ignore[arg-type]
            pipe.pexpire(log_key, ttl)
            await pipe.execute()
    finally:
        await client.aclose()


async def stored_epoch(redis_url: str, session_id: str) -> int:
    store = open_store(redis_url, StoreLimits())
    try:
        record = await store.get(session_id)
        assert record is not None
        return record.epoch
    finally:
        await store.close()
