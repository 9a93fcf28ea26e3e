"""The engine-facing value types: what to generate, and what a generation pushes back.

Sans-I/O: the session core builds a :class:`GenerationRequest` and takes the
:class:`OutputChunk` and :class:`FinishReason` an engine reports; the engine
interface itself (``Engine``, ``Generation``, ``GenerationSink``) lives in
``wsserver.engine.base``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from protocol.conversation import Turn


class FinishReason(enum.StrEnum):
    """Why a generation stopped."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    """The answer waits for the results of the tool calls it made."""
    ABORTED = "aborted"
    ERROR = "error"
    UPSTREAM_ERROR = "upstream_error"
    """An upstream model server failed or sent something unusable (after retries)."""
    UPSTREAM_TIMEOUT = "upstream_timeout"
    """An upstream model server stopped answering: no first token, or no next chunk, in time."""


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """What to generate."""

    request_id: str
    prompt: Sequence[Turn]
    max_output_tokens: int
    prefix: str = ""
    """Assistant text already given for this turn; generation continues after it."""
    input_audio: bytes = b""
    """PCM16 mono of the user's latest turn when it was spoken (the prompt holds a
    placeholder for it); a speech engine listens to this."""
    sample_rate: int = 16000
    """Rate of ``input_audio`` and of the audio output."""
    audio_output: bool = False
    """Speak the answer: output chunks carry PCM16 audio for their text."""
    tools: tuple[dict[str, Any], ...] = ()
    """Tools the model may call (name, description, JSON Schema parameters)."""
    response_format: dict[str, Any] | None = None
    """A JSON Schema the answer's text must match (structured output), if any."""


@dataclass(frozen=True, slots=True)
class ToolCallFragment:
    """A piece of a tool call's arguments (JSON text), or the end of them."""

    call_id: str
    name: str
    arguments: str = ""
    complete: bool = False
    """The call's arguments are whole (nothing more will come for this call)."""


@dataclass(frozen=True, slots=True)
class Transcript:
    """What a speech engine heard in the request's ``input_audio`` (so far, or all of it)."""

    text: str
    final: bool = True
    """The whole turn's text; a partial one (``False``) may still change."""


@dataclass(frozen=True, slots=True)
class OutputChunk:
    """A piece of generated text, how many tokens it took, and the audio that speaks it."""

    text: str
    tokens: int = 1
    audio: bytes = b""
    """PCM16 mono at the request's sample rate; empty for text-only output."""
    audio_ms: float = 0.0
    """Playing time of ``audio``."""
    tool_call: ToolCallFragment | None = None
    """Set instead of text when the model is writing a tool call."""
    transcript: Transcript | None = None
    """Set instead of text when a speech engine reports what the user said (no tokens)."""
