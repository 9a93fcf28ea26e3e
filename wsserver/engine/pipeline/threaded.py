"""Run a blocking model generator in a worker thread and stream its items to asyncio.

A model call cannot be interrupted from outside: when the reader goes away
(the generation was aborted), the thread is told to stop and does so at the
next item; an item it is computing then is discarded. One thread per model
keeps calls in order and the CPU use of one model bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from wsserver.engine.pipeline.errors import PipelineError

T = TypeVar("T")

_END = object()


class ModelThreadClosed(PipelineError):
    """The model's thread was closed while the call waited for it."""


class ModelThread:
    """One worker thread for one model's calls."""

    def __init__(self, name: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.abandoned = 0
        """Calls whose reader left before they finished (their results were discarded)."""

    async def stream(self, make: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
        """The items of ``make()``, computed in the thread; exceptions re-raised here."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        stop = threading.Event()

        def post(item: object) -> None:
            # The loop may be gone by the time a long call ends: nobody waits any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            if stop.is_set():
                return  # abandoned while queued behind another call: never start it
            try:
                for item in make():
                    if stop.is_set():
                        return
                    post(item)
                post(_END)
            except BaseException as exc:  # handed to the reader, raised there
                post(exc)

        future = loop.run_in_executor(self._executor, work)

        def closed(done: asyncio.Future[None]) -> None:
            # close() cancels a call still queued: it never runs, nor posts its end.
            if done.cancelled():
                queue.put_nowait(ModelThreadClosed("model thread closed before the call ran"))

        future.add_done_callback(closed)
        finished = False
        try:
            while True:
                item = await queue.get()
                if item is _END:
                    finished = True
                    return
                if isinstance(item, BaseException):
                    finished = True
                    raise item
                yield item  # type: ignore[misc]
        finally:
            if not finished:
                stop.set()
                self.abandoned += 1
            # Never await the thread here: an aborted call must not hold its reader.
            future.add_done_callback(_consume)

    def close(self) -> None:
        """Stop taking calls (one that runs finishes in the background)."""
        self._executor.shutdown(wait=False, cancel_futures=True)


def _consume(future: asyncio.Future[None]) -> None:
    # Retrieve the outcome so an abandoned call's end is never logged as unhandled.
    if not future.cancelled():
        future.exception()
