"""The event loop a command runs on: uvloop when it is installed, else asyncio's."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


def run_command(coro: Coroutine[Any, Any, int]) -> int:
    """Run a command's coroutine to its end; its exit status."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
