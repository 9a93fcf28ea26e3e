"""A session the store lost (Redis restarted empty) is written back by its owner."""

from __future__ import annotations

import asyncio
import json

import redis.asyncio as redis_asyncio

from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient, text_of


async def test_the_owner_writes_a_lost_record_again(
    start_server: StartServer, redis_url: str
) -> None:
    a = await start_server(store=redis_url, answer_tokens=20)
    client = await RawClient.connect(url_of(a))
    ready = await client.start()
    await client.send({"type": "response.create", "input": "before"})
    await client.until("response.done")
    store = redis_asyncio.Redis.from_url(redis_url)
    try:
        await store.flushdb()  # what a Redis restarted without its data holds
        await client.send({"type": "response.create", "input": "after"})
        done = await client.until("response.done")
        # The next batch finds the record gone; the owner writes it again, then the
        # events up to the answer's end (a takeover before that would rightly end the
        # answer `failed`: the store would still have it running).
        stored_seq = 0
        for _ in range(500):
            if metas := await store.keys("wss:*:meta"):
                stream = await store.hget(metas[0], "stream")
                stored_seq = json.loads(stream)["last_seq"] if stream else 0
                if stored_seq >= done["seq"]:
                    break
            await asyncio.sleep(0.02)
        assert len(await store.keys("wss:*:meta")) == 1, "the record was written again"
        assert stored_seq >= done["seq"], (stored_seq, done["seq"])
    finally:
        await store.aclose()
    client.abort()  # a dropped connection: the session waits for a resume (a close ends it)

    # Another worker can resume the session from the record written again.
    b = await start_server(store=redis_url, answer_tokens=20)
    again = await RawClient.connect(url_of(b))
    await again.resume(ready, done["seq"])
    resumed = await again.until("session.ready")
    assert resumed["session_id"] == ready["session_id"]
    await again.send({"type": "response.create", "input": "on b"})
    finished = await again.until("response.done")
    assert finished["status"] == "completed", finished
    assert text_of(again.seen)
    await again.close()
