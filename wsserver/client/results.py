"""What the SDK hands back for a response: its text, audio, tool calls, status and usage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class ResponseResult:
    """A finished (or truncated) response."""

    response_id: str
    text: str
    status: str
    reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    """Every event of the response except audio chunks (those are in ``audio``)."""
    audio: bytes = b""
    """The response's audio (PCM16 at the session's rate), when it had any."""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """The ``response.tool_call`` events of the response."""
    output_json: Any = None
    """The final structured output (``response.output_json.done``), when asked for."""
    transcript: str | None = None
    """What the user said in the spoken turn this response answers, as the server's
    speech-to-text heard it (the final ``input_audio.transcript``); ``None`` when the
    turn was typed or the server does not transcribe."""
