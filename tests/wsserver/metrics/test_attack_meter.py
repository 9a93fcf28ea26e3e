"""Stops that stop nothing: an interrupt or cancel with no response running is no stop.

Were it kept, the next response's ``done`` would be timed from it: a stop latency
as long as the pause between the two answers, for a stop nobody waited on.
"""

from __future__ import annotations

import asyncio

from tests.wsserver.frontdoor.http import connect_as
from tests.wsserver.metrics.conftest import MeteredWorker
from tests.wsserver.metrics.scrape import moved, scrape


async def test_a_stop_with_nothing_running_is_not_timed_against_the_next_answer(
    worker: MeteredWorker,
) -> None:
    client = await connect_as(worker.url, key=worker.user_key)
    await client.start()
    await client.send({"type": "response.create", "input": "first"})
    await client.until("response.done")
    before = await asyncio.to_thread(scrape, worker.base, worker.admin_key)
    for stop in ("response.cancel", "response.interrupt"):
        await client.send({"type": stop})  # after the done: nothing to stop
    await client.until("error")
    await client.send({"type": "response.create", "input": "second"})
    done = await client.until("response.done")
    after = await asyncio.to_thread(scrape, worker.base, worker.admin_key)
    assert done["status"] == "completed"
    assert moved(before, after, "wsserver_stop_latency_seconds_count") == 0
    assert moved(before, after, "wsserver_responses_total", status="completed") == 1
    await client.close()


async def test_a_stop_whose_done_left_after_a_resume_is_not_timed(
    worker: MeteredWorker,
) -> None:
    """Interrupt, drop before the done, resume (the done is replayed), ask again: the
    interrupt must not be timed to the next answer's done (it was, at the pause's length)."""
    before = await asyncio.to_thread(scrape, worker.base, worker.admin_key)
    for _ in range(3):
        client = await connect_as(worker.url, key=worker.user_key)
        ready = await client.start()
        await client.send({"type": "response.create", "input": "long", "max_output_tokens": 4096})
        await client.until("response.text.delta")
        await client.send({"type": "response.interrupt"})
        client.abort()  # before its done arrives (or with it, unread)
        resumed = await connect_as(worker.url, key=worker.user_key)
        await resumed.resume(ready, 1)
        await resumed.until("response.done")
        await asyncio.sleep(1.0)  # a stale stop would be timed at least this long
        await resumed.send({"type": "response.create", "input": "next"})
        assert (await resumed.until("response.done"))["status"] == "completed"
        await resumed.close()
    after = await asyncio.to_thread(scrape, worker.base, worker.admin_key)
    timed = moved(before, after, "wsserver_stop_latency_seconds_count")
    # Only interrupts whose done left before the drop are timed, each within milliseconds
    # (a second is generous); a stale one would take the whole pause and more.
    assert moved(before, after, "wsserver_responses_total", status="completed") == 3
    within = moved(before, after, "wsserver_stop_latency_seconds_bucket", le="1.0")
    assert timed == within, f"{timed - within} of {timed} stops timed past the pause"
