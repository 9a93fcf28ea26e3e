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
