"""The model thread: a call whose reader left before it started is never run."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

import pytest

from wsserver.engine.pipeline.threaded import ModelThread, ModelThreadClosed


async def test_a_call_abandoned_while_queued_never_runs() -> None:
    # Found by the issue-12 attack: a call queued behind another on the model's one
    # thread, whose reader was aborted (a barge-in, an abandoned session), still ran its
    # first segment or sentence when its turn came: model time spent for nobody, and
    # every session behind it waited for it.
    model = ModelThread("test-model")
    release = threading.Event()
    started = threading.Event()
    ran: list[str] = []

    def slow() -> Iterator[str]:
        ran.append("first")
        started.set()
        release.wait(10)
        yield "first done"

    def abandoned() -> Iterator[str]:
        ran.append("abandoned")
        yield "nobody reads this"

    def last() -> Iterator[str]:
        ran.append("last")
        yield "last done"

    first = model.stream(slow)
    first_item = asyncio.ensure_future(first.__anext__())
    assert await asyncio.to_thread(started.wait, 10)  # the first call holds the thread
    queued = model.stream(abandoned)
    queued_item = asyncio.ensure_future(queued.__anext__())
    await asyncio.sleep(0.05)  # queued behind the first call
    queued_item.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await queued_item
    await queued.aclose()  # type: ignore[attr-defined]  # an async generator
    release.set()
    assert await first_item == "first done"
    await first.aclose()  # type: ignore[attr-defined]
    assert [item async for item in model.stream(last)] == ["last done"]
    model.close()
    assert ran == ["first", "last"], ran


async def test_a_call_queued_when_the_thread_closes_fails_instead_of_waiting_forever() -> None:
    # close() cancels the calls still queued; their readers waited for an item that
    # never came (a hung task behind every transcription queued at shutdown).
    model = ModelThread("test-model")
    release = threading.Event()
    started = threading.Event()

    def slow() -> Iterator[str]:
        started.set()
        release.wait(10)
        yield "first done"

    def queued() -> Iterator[str]:
        yield "never"

    first = model.stream(slow)
    first_item = asyncio.ensure_future(first.__anext__())
    assert await asyncio.to_thread(started.wait, 10)
    second = model.stream(queued)
    second_item = asyncio.ensure_future(second.__anext__())
    await asyncio.sleep(0.05)  # queued behind the first call
    model.close()
    try:
        with pytest.raises(ModelThreadClosed):
            await asyncio.wait_for(second_item, 10)
    finally:
        release.set()
    assert await first_item == "first done"  # the running call finishes
    await first.aclose()  # type: ignore[attr-defined]
