"""The engine interface: anything that turns a conversation into streamed output.

A request is submitted and returns a :class:`Generation` at once; the caller
iterates it for output chunks and may ``abort()`` it at any time, which must
stop the work (free a batch slot, close an upstream stream) before returning.
The simulated engine and an OpenAI-compatible HTTP engine both fit.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from protocol.conversation import Turn


class EngineError(Exception):
    """Base class of engine failures."""


class EngineOverloaded(EngineError):
    """The engine's queue is full; the request was not accepted."""


class FinishReason(enum.StrEnum):
    """Why a generation stopped."""

    STOP = "stop"
    LENGTH = "length"
    ABORTED = "aborted"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """What to generate."""

    request_id: str
    prompt: Sequence[Turn]
    max_output_tokens: int
    prefix: str = ""
    """Assistant text already given for this turn; generation continues after it."""


@dataclass(frozen=True, slots=True)
class OutputChunk:
    """A piece of generated text and how many tokens it took."""

    text: str
    tokens: int = 1


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

    def __aiter__(self) -> AsyncIterator[OutputChunk]:
        """Output chunks until the generation stops."""
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

    def submit(self, request: GenerationRequest) -> Generation:
        """Accept a request; raises :class:`EngineOverloaded` when full."""
        ...

    def stats(self) -> dict[str, int]:
        """Counters for monitoring (active, queued, tokens generated...)."""
        ...
