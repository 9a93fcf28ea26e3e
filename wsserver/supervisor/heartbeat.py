"""A group's workers prove their event loop runs: a byte a second on a pipe of their own.

A worker that is stopped (SIGSTOP), deadlocked or stuck in a blocking call still holds
its share of the port, and the kernel goes on handing it new connections that nobody
answers. Its process has not exited, so only its silence tells: the parent kills a
worker whose heartbeats stop (``--worker-liveness-timeout``), and restarts it as it does
one that crashed.

The pipe is the worker's alone (not its stdout): its end is non-blocking, so a parent
that stops reading costs the worker a missed beat, never a blocked loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time

HEARTBEAT_INTERVAL_S = 1.0
"""How often a worker writes its heartbeat."""
_BEAT = b"."


async def send_heartbeats(fd: int) -> None:
    """Write a heartbeat to ``fd`` every second until cancelled or the parent is gone."""
    os.set_blocking(fd, False)
    try:
        while True:
            try:
                os.write(fd, _BEAT)
            except BlockingIOError:
                pass  # the parent is not reading now: this beat is skipped
            except OSError:
                return  # the parent is gone (its parent watch drains this worker)
            await asyncio.sleep(HEARTBEAT_INTERVAL_S)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


class HeartbeatMonitor(asyncio.Protocol):
    """The parent's end: when the worker's last heartbeat came."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self._transport: asyncio.BaseTransport | None = None

    @classmethod
    async def open(cls, fd: int) -> HeartbeatMonitor:
        """Read heartbeats from the pipe ``fd`` (taken over: closed with the monitor)."""
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(fd, "rb", buffering=0)
        _, monitor = await loop.connect_read_pipe(cls, pipe)
        return monitor

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's pipe transport is not an asyncio.ReadTransport subclass: kept as given.
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self.last = time.monotonic()

    def eof_received(self) -> bool | None:
        return None  # the worker exited or closed its end: its exit is watched apart

    def reset(self) -> None:
        """Count silence from now (the worker just became ready)."""
        self.last = time.monotonic()

    def silent_for(self) -> float:
        """Seconds since the last heartbeat (or since :meth:`reset`)."""
        return time.monotonic() - self.last

    def close(self) -> None:
        """Stop reading; closes the pipe."""
        if self._transport is not None:
            self._transport.close()
