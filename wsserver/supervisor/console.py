"""The group parent's output (its own lines and its workers'), written off its loop.

A write to a pipe whose reader stopped reading (a terminal paused with Ctrl-S, a log
shipper that stalled) blocks until the reader is back. Written from the event loop, it
would stop the group's supervision with it: no signal handled, no dead worker
restarted, and the heartbeats of healthy workers left unread, so that when the reader
came back every worker would look silent. Every write goes to a thread instead, one
per stream (stdout, stderr), in the order asked for, so no line is split by another's
and a stalled stdout holds up no log line; the loop never waits on them:

- :func:`say` (the parent's own lines) returns at once; while the reader is away its
  lines wait, up to :data:`MAX_PENDING_BYTES`, and past that are counted and dropped
  (one line then says how many);
- :func:`write` (a worker's output, relayed) waits for its turn without blocking the
  loop, so a worker that writes more than the reader takes is slowed down, not
  buffered without bound.

The threads are daemons, so a reader that never comes back cannot hold the process
at exit; :func:`flush` gives the last lines a bounded time to get out first.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sys
import threading
from collections.abc import Callable
from typing import Protocol

MAX_PENDING_BYTES = 1 << 20
"""The parent's own lines kept per stream while its reader is away (the memory bound)."""


class TextSink(Protocol):
    """Where the text goes (``sys.stdout``, ``sys.stderr``)."""

    def write(self, text: str, /) -> int:
        """Write ``text``."""
        ...

    def flush(self) -> None:
        """Push it out."""
        ...


_Done = Callable[[], None]


class _Writer:
    """One stream's thread, and the :func:`say` lines waiting for it."""

    def __init__(self, sink: TextSink) -> None:
        self.sink = sink
        self.queue: queue.SimpleQueue[tuple[str, _Done | None]] = queue.SimpleQueue()
        self.pending = 0
        """Bytes of :func:`say` lines queued and not yet written (guarded by ``_lock``)."""
        self.dropped = 0
        """Lines :func:`say` dropped since the last one it kept (guarded by ``_lock``)."""
        threading.Thread(target=self._write_forever, name="group output", daemon=True).start()

    def _write_forever(self) -> None:
        while True:
            text, done = self.queue.get()
            # What print() does on a closed or broken stream here: the text is lost,
            # and nothing else (the reader of the group's output went away: EPIPE). Any
            # other failure of a sink is taken alike: this thread must outlive it, or
            # every relay waiting for its turn would wait for ever.
            with contextlib.suppress(Exception):
                if text:
                    self.sink.write(text)
                    self.sink.flush()
            if done is not None:
                done()


_lock = threading.Lock()
_writers: dict[int, _Writer] = {}
"""By the ``id`` of their sink (each writer holds its sink, so the id stays its own)."""


def say(line: str, *, error: bool = False) -> None:
    """Print ``line`` (a newline is added) on stdout, or stderr with ``error``; never waits."""
    writer = _writer(sys.stderr if error else sys.stdout)
    text = line + "\n"
    with _lock:
        if writer.pending + len(text) > MAX_PENDING_BYTES:
            writer.dropped += 1
            return
        if writer.dropped:
            text = (
                f"({writer.dropped} lines of the group's output dropped: nobody read them)\n" + text
            )
            writer.dropped = 0
        writer.pending += len(text)
    writer.queue.put((text, _said(writer, len(text))))


async def write(sink: TextSink, text: str) -> None:
    """Write ``text`` to ``sink`` in its turn; returns once it is written (or failed)."""
    written = _future()
    _writer(sink).queue.put((text, written))
    await written


async def flush(timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for everything asked so far to be written."""
    with _lock:
        writers = list(_writers.values())
    markers = [_future() for _ in writers]
    for writer, marker in zip(writers, markers, strict=True):
        writer.queue.put(("", marker))
    try:
        await asyncio.wait_for(asyncio.gather(*markers), timeout)
    except TimeoutError:
        return False
    return True


class _Marker(asyncio.Future[None]):
    """A future the writer thread settles when it reaches it."""

    def __call__(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed meanwhile
            self.get_loop().call_soon_threadsafe(self._settle)

    def _settle(self) -> None:
        if not self.done():
            self.set_result(None)


def _future() -> _Marker:
    return _Marker(loop=asyncio.get_running_loop())


def _writer(sink: TextSink) -> _Writer:
    with _lock:
        writer = _writers.get(id(sink))
        if writer is None:
            writer = _writers[id(sink)] = _Writer(sink)
        return writer


def _said(writer: _Writer, size: int) -> _Done:
    def done() -> None:
        with _lock:
            writer.pending -= size

    return done
