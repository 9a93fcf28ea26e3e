"""The client messages the SDK's methods send, built from their arguments.

An argument left as None is left out of the message: the server applies its default.
"""

from __future__ import annotations

from typing import Any


def response_create(
    text: str | None, max_output_tokens: int | None, response_format: dict[str, Any] | None
) -> dict[str, Any]:
    """``response.create``; ``response_format`` is the JSON Schema the answer must match."""
    message: dict[str, Any] = {"type": "response.create"}
    if text is not None:
        message["input"] = text
    if max_output_tokens is not None:
        message["max_output_tokens"] = max_output_tokens
    if response_format is not None:
        message["response_format"] = {"type": "json_schema", "schema": response_format}
    return message


def overrides(
    instructions: str | None, tools: list[dict[str, Any]] | None, audio_output: bool | None
) -> dict[str, Any]:
    """The fields of a ``response.create`` that hold for that response only."""
    fields = {"instructions": instructions, "tools": tools, "audio_output": audio_output}
    return {k: v for k, v in fields.items() if v is not None}


def start_settings(max_output_tokens: int | None, tool_rounds: str | None) -> dict[str, Any] | None:
    """``session.start`` ``settings`` (None when every one is the server's default)."""
    fields = {"max_output_tokens": max_output_tokens or None, "tool_rounds": tool_rounds}
    settings = {k: v for k, v in fields.items() if v is not None}
    return settings or None


def session_update(
    instructions: str | None = None,
    tools: list[dict[str, Any]] | None = None,
    audio: dict[str, Any] | None = None,
    tool_rounds: str | None = None,
) -> dict[str, Any]:
    """``session.update`` of the settings given (``instructions=""`` clears them)."""
    fields = {
        "instructions": instructions,
        "tools": tools,
        "audio": audio,
        "tool_rounds": tool_rounds,
    }
    if all(v is None for v in fields.values()):
        raise ValueError("update_session needs at least one setting")
    return {"type": "session.update", **{k: v for k, v in fields.items() if v is not None}}


def response_continue(response_id: str, max_output_tokens: int | None) -> dict[str, Any]:
    """``response.continue`` of an unfinished response."""
    message: dict[str, Any] = {"type": "response.continue", "response_id": response_id}
    if max_output_tokens is not None:
        message["max_output_tokens"] = max_output_tokens
    return message


def response_interrupt(
    rendered_chars: int | None, played_ms: int | None, response_id: str | None
) -> dict[str, Any]:
    """``response.interrupt``, with how much of the answer the user saw or heard."""
    message: dict[str, Any] = {"type": "response.interrupt"}
    if rendered_chars is not None:
        message["rendered_chars"] = rendered_chars
    if played_ms is not None:
        message["played_ms"] = played_ms
    if response_id is not None:
        message["response_id"] = response_id
    return message


def response_cancel(response_id: str | None) -> dict[str, Any]:
    """``response.cancel``."""
    message: dict[str, Any] = {"type": "response.cancel"}
    if response_id is not None:
        message["response_id"] = response_id
    return message


def ping(request_id: str | None) -> dict[str, Any]:
    """An application-level ``ping``."""
    message: dict[str, Any] = {"type": "ping"}
    if request_id is not None:
        message["id"] = request_id
    return message
