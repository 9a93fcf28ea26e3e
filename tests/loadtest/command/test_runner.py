"""Stopping a run's sessions at the duration bound, whatever a session does with a cancel."""

from __future__ import annotations

import asyncio

from loadtest.command.runner import _stop


async def test_a_session_that_swallowed_a_cancel_is_cancelled_again() -> None:
    """As ``asyncio.wait_for`` on Python 3.11 can: the frame it awaited arrived with the
    cancel, so it returns the frame and the session reads on."""
    cancels = 0

    async def stubborn() -> None:
        nonlocal cancels
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancels += 1
                if cancels == 1:
                    continue  # swallowed once
                raise

    async def plain() -> None:
        await asyncio.sleep(3600)

    tasks = [asyncio.create_task(stubborn()), asyncio.create_task(plain())]
    await asyncio.sleep(0)
    await asyncio.wait_for(_stop(tasks), 10)
    assert all(task.done() for task in tasks)
    assert cancels == 2
