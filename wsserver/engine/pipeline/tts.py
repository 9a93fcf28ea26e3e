"""The text-to-speech interface: text in, PCM16 mono at the session's rate out."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol


class TextToSpeech(Protocol):
    """A synthesizer (local voice or server)."""

    def synthesize(self, text: str, sample_rate: int) -> AsyncGenerator[bytes, None]:
        """PCM16 mono chunks at ``sample_rate`` that speak ``text``, as they are made.

        Raises :class:`~wsserver.engine.pipeline.errors.TextToSpeechError`.
        Closing the iterator or cancelling the task reading it stops the work
        where it can be stopped (a model call already running in a thread
        finishes there; its result is discarded).
        """
        ...

    async def close(self) -> None:
        """Release the resources (an HTTP pool); idempotent."""
        ...
