"""The fast send path's shared flush: one loop callback for every connection woken."""

from __future__ import annotations

import asyncio
import functools

import pytest

from wsserver.transport.flush_queue import flush_queue


async def test_wakes_of_one_loop_turn_are_flushed_in_one_callback_in_their_order() -> None:
    loop = asyncio.get_running_loop()
    queue = flush_queue(loop)
    assert flush_queue(loop) is queue, "one queue per loop"
    ran: list[tuple[int, int]] = []
    turn = 0

    def flusher(name: int) -> None:
        ran.append((name, turn))

    for name in range(5):
        queue.add(functools.partial(flusher, name))
    await asyncio.sleep(0)
    turn = 1
    queue.add(lambda: flusher(5))
    await asyncio.sleep(0)
    assert ran == [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 1)]


async def test_a_flush_that_fails_leaves_the_others_of_its_turn_flushed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = flush_queue(asyncio.get_running_loop())
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("boom")

    queue.add(lambda: ran.append("before"))
    queue.add(broken)
    queue.add(lambda: ran.append("after"))
    await asyncio.sleep(0)
    assert ran == ["before", "after"]
    assert "a connection's flush failed" in caplog.text
    # And the queue goes on working.
    queue.add(lambda: ran.append("next turn"))
    await asyncio.sleep(0)
    assert ran[-1] == "next turn"


def test_each_event_loop_has_its_own_queue() -> None:
    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        assert flush_queue(first) is not flush_queue(second)
    finally:
        first.close()
        second.close()
