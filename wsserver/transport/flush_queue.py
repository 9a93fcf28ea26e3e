"""One loop callback flushes every fast connection woken since the last one.

A decode step hands a token to each of hundreds of sessions; each session wakes its
connection. Scheduling a callback per connection costs a handle and a dispatch per
token; here the first wake of a loop turn schedules one callback and the others join
its list, so a step's frames are written in one callback, in the order they woke.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable

log = logging.getLogger(__name__)

_queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, FlushQueue] = (
    weakref.WeakKeyDictionary()
)


class FlushQueue:
    """Flush callbacks waiting for this loop's next turn."""

    __slots__ = ("_loop", "_ready", "_scheduled")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._ready: list[Callable[[], None]] = []
        self._scheduled = False

    def add(self, flush: Callable[[], None]) -> None:
        """Run ``flush`` in the loop's next turn, with every other one added before it."""
        self._ready.append(flush)
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        ready, self._ready = self._ready, []
        for flush in ready:
            try:
                flush()
            except Exception:
                # A flush handles its own connection's errors; one that escapes must not
                # leave the other connections of this turn unflushed.
                log.exception("a connection's flush failed")


def flush_queue(loop: asyncio.AbstractEventLoop) -> FlushQueue:
    """The loop's queue (one per event loop, gone with it)."""
    queue = _queues.get(loop)
    if queue is None:
        queue = _queues[loop] = FlushQueue(loop)
    return queue
