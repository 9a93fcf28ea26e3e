"""The speech-to-text interface: PCM16 mono at a rate in, the words heard out."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

from protocol.generation import Transcript


class SpeechToText(Protocol):
    """A transcriber (local model or server)."""

    def transcribe(self, audio: bytes, sample_rate: int) -> AsyncGenerator[Transcript, None]:
        """Partial transcripts (``final=False``) as they come, then exactly one final one.

        Raises :class:`~wsserver.engine.pipeline.errors.SpeechToTextError`.
        Closing the iterator or cancelling the task reading it stops the work
        where it can be stopped (a model call already running in a thread
        finishes there; its result is discarded).
        """
        ...

    async def close(self) -> None:
        """Release the resources (an HTTP pool); idempotent."""
        ...
