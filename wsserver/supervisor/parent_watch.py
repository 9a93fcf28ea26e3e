"""A group's worker drains when its parent is gone, even one killed with SIGKILL."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable


def on_parent_exit(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
    """Call ``callback`` on ``loop`` when stdin ends: the parent holds its other end
    open for the worker's whole life, and the kernel closes it when the parent dies."""

    def wait_for_end() -> None:
        # The raw descriptor: a daemon thread inside the buffered reader's lock aborts
        # the interpreter's shutdown.
        while os.read(sys.stdin.fileno(), 4096):
            pass
        # Stdout is a pipe to the parent too, now gone: the drain's lines there raised
        # BrokenPipeError and the worker died instead of draining. They go nowhere now
        # (the logs are on stderr, which was never the parent's pipe).
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        loop.call_soon_threadsafe(callback)

    threading.Thread(target=wait_for_end, name="parent watch", daemon=True).start()
