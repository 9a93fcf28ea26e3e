"""Attacks on the group's stop: a drain that meets a worker whose start was cut short.

A SIGTERM during a rolling restart cancels the roll; if that lands while a replacement
is being spawned, the replacement has no process yet. The group (the real one, in
process, with real worker processes) must still drain and exit with a status.
"""

from __future__ import annotations

import asyncio

import pytest

from wsserver.supervisor.group import WorkerGroup
from wsserver.worker.settings import Settings


async def test_a_start_cancelled_mid_spawn_leaves_nothing_to_drain() -> None:
    settings = Settings(store="redis://127.0.0.1:1/0", host="127.0.0.1", port=0)
    group = WorkerGroup(settings, 2, [])
    child = group._new_child(0)
    starting = asyncio.create_task(group._start(child))
    await asyncio.sleep(0)  # inside the spawn: forked, its pipes not yet connected
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    assert child not in group.live
    group.stopping.set()  # what the SIGTERM did
    assert await asyncio.wait_for(group._stop(), 30) == 0
