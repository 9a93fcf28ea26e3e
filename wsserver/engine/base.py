"""The engine interface: anything that turns a conversation into streamed output.

A request is submitted with a :class:`GenerationSink`; the engine pushes output
chunks into the sink as it decodes (no task hop per token) and reports the end
once. The returned :class:`Generation` may be ``abort()``-ed at any time, which
must stop the work (free a batch slot, close an upstream stream) before
returning; an aborted generation reports nothing more. The simulated engine
calls the sink from its decode loop; an HTTP streaming engine calls it from the
task that reads its response stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Protocol

# The value types an engine takes and pushes are sans-I/O, shared with the session core.
from protocol.generation import FinishReason, GenerationRequest, OutputChunk, ToolCallFragment

__all__ = [
    "Engine",
    "EngineError",
    "EngineOverloaded",
    "FinishReason",
    "Generation",
    "GenerationRequest",
    "GenerationSink",
    "OutputChunk",
    "QueueSink",
    "ToolCallFragment",
]


class EngineError(Exception):
    """Base class of engine failures."""


class EngineOverloaded(EngineError):
    """The engine's queue is full; the request was not accepted."""


class GenerationSink(Protocol):
    """Receives a generation's output."""

    def on_output(self, chunk: OutputChunk) -> None:
        """New text (called in order, never after ``on_finish`` or ``abort``)."""
        ...

    def on_finish(self, reason: FinishReason) -> None:
        """The generation stopped by itself (stop, length, error); called once."""
        ...


class Generation(Protocol):
    """A running request."""

    @property
    def input_tokens(self) -> int:
        """Tokens of the prompt, as the engine counted them."""
        ...

    @property
    def generated_tokens(self) -> int:
        """Every token the engine produced for this request, delivered or not."""
        ...

    @property
    def finish_reason(self) -> FinishReason | None:
        """Why it stopped; ``None`` while running."""
        ...

    def abort(self) -> None:
        """Stop generating now; iteration ends. Idempotent."""
        ...


class Engine(Protocol):
    """A model server."""

    async def start(self) -> None:
        """Prepare (start loops, open pools)."""
        ...

    async def close(self) -> None:
        """Abort everything and release resources."""
        ...

    def submit(self, request: GenerationRequest, sink: GenerationSink) -> Generation:
        """Accept a request; raises :class:`EngineOverloaded` when full."""
        ...

    def stats(self) -> dict[str, int]:
        """Counters for monitoring (active, queued, tokens generated...)."""
        ...


class QueueSink:
    """A sink that turns pushed output back into an async iterator (tests, adapters)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[OutputChunk | FinishReason] = asyncio.Queue()
        self.finish_reason: FinishReason | None = None

    def on_output(self, chunk: OutputChunk) -> None:
        self._queue.put_nowait(chunk)

    def on_finish(self, reason: FinishReason) -> None:
        self._queue.put_nowait(reason)

    async def chunks(self, timeout: float | None = None) -> AsyncIterator[OutputChunk]:
        """Chunks until the generation finishes (or ``timeout`` passes without output)."""
        while True:
            try:
                # Not wait_for: on Python 3.11 it swallows a cancel that comes with a chunk.
                async with asyncio.timeout(timeout):
                    item = await self._queue.get()
            except TimeoutError:
                return
            if isinstance(item, FinishReason):
                self.finish_reason = item
                return
            yield item
