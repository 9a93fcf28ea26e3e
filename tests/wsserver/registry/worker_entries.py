"""Worker entries for registry and placement tests, and a bounded poll."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TypeVar

from wsserver.registry.base import WorkerInfo

T = TypeVar("T")


def info(worker_id: str, **fields: object) -> WorkerInfo:
    """A worker entry with room, not draining; ``fields`` replace any of its values."""
    base = WorkerInfo(worker_id, f"ws://127.0.0.1:{9000 + len(worker_id)}", 0, 0, False, 1.0)
    return replace(base, **fields)  # type: ignore[arg-type]


async def until(
    read: Callable[[], Awaitable[T]], done: Callable[[T], bool], timeout: float = 10.0
) -> None:
    """Poll ``read()`` until ``done`` holds; fail after ``timeout`` (a bound, not a measure)."""
    deadline = time.monotonic() + timeout
    while not done(await read()):
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)
