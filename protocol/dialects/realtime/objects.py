"""Complete Realtime objects: items, responses and usage, as the SDK's types name them."""

from __future__ import annotations

import json
from typing import Any

from protocol.dialects.realtime.session_config import PCM_FORMAT, SessionConfig
from protocol.dialects.realtime.state import OutputItem

ITEM_OBJECT = "realtime.item"


def item_status(item: OutputItem, final_status: str) -> str:
    """``in_progress`` while open, else the status the response ended its items with."""
    return "in_progress" if item.open else final_status


def output_item_object(item: OutputItem, status: str) -> dict[str, Any]:
    """An assistant message or function call item (``RealtimeConversationItem*``)."""
    if item.kind == "function_call":
        return {
            "id": item.item_id,
            "object": ITEM_OBJECT,
            "type": "function_call",
            "status": status,
            "call_id": item.call_id,
            "name": item.name,
            "arguments": "".join(item.arguments),
        }
    return {
        "id": item.item_id,
        "object": ITEM_OBJECT,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [content_object(item)] if item.text or item.audio_started else [],
    }


def content_object(item: OutputItem) -> dict[str, Any]:
    """The message item's one content part, as item content."""
    text = "".join(item.text)
    if item.audio:
        return {"type": "output_audio", "audio": None, "transcript": text, "text": None}
    return {"type": "output_text", "text": text, "audio": None, "transcript": None}


def part_object(item: OutputItem) -> dict[str, Any]:
    """The content part of ``response.content_part.added`` / ``done``."""
    text = "".join(item.text)
    if item.audio:
        return {"type": "audio", "audio": None, "transcript": text, "text": None}
    return {"type": "text", "text": text, "audio": None, "transcript": None}


def user_text_item(item_id: str, text: str) -> dict[str, Any]:
    """A user message item holding text."""
    return _user_item(
        item_id, {"type": "input_text", "text": text, "audio": None, "transcript": None}
    )


def user_audio_item(item_id: str, transcript: str | None) -> dict[str, Any]:
    """A user message item holding a committed spoken turn (its audio is not echoed)."""
    part = {"type": "input_audio", "audio": None, "transcript": transcript, "text": None}
    return _user_item(item_id, part)


def _user_item(item_id: str, part: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": ITEM_OBJECT,
        "type": "message",
        "role": "user",
        "status": "completed",
        "content": [part | {"image_url": None, "detail": None}],
    }


def function_call_output_item(item_id: str, call_id: str, output: str) -> dict[str, Any]:
    """A ``function_call_output`` item the client created."""
    return {
        "id": item_id,
        "object": ITEM_OBJECT,
        "type": "function_call_output",
        "status": "completed",
        "call_id": call_id,
        "output": output,
    }


def usage_object(native_usage: Any) -> dict[str, Any] | None:
    """Native usage in the shape of ``RealtimeResponseUsage`` (every detail filled)."""
    if not isinstance(native_usage, dict):
        return None
    input_tokens = _count(native_usage.get("input_tokens"))
    output_tokens = _count(native_usage.get("output_tokens_generated"))
    return {
        "total_tokens": input_tokens + output_tokens,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "input_token_details": {
            "text_tokens": input_tokens,
            "audio_tokens": 0,
            "image_tokens": 0,
            "cached_tokens": 0,
            "cached_tokens_details": {"text_tokens": 0, "audio_tokens": 0, "image_tokens": 0},
        },
        "output_token_details": {"text_tokens": output_tokens, "audio_tokens": 0},
    }


def _count(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


# native (status, reason) -> Realtime status_details.reason
_CANCEL_REASONS = {"speech": "turn_detected"}


def status_details(status: str, reason: Any, error: Any) -> dict[str, Any] | None:
    """Realtime ``(status, status_details)`` of a native ending; ``None`` for completed."""
    if status == "completed":
        return None
    if status in ("interrupted", "cancelled"):
        return {
            "type": "cancelled",
            # A reason of another type (a damaged stored event) is no known one.
            "reason": _CANCEL_REASONS.get(_text(reason) or "", "client_cancelled"),
            "error": None,
        }
    if status == "incomplete":
        if reason == "max_output_tokens":
            return {"type": "incomplete", "reason": "max_output_tokens", "error": None}
        return {
            "type": "incomplete",
            "reason": None,
            "error": {"type": "incomplete", "code": _text(reason), "message": _text(reason)},
        }
    message = error.get("message") if isinstance(error, dict) else None
    return {
        "type": "failed",
        "reason": None,
        "error": {
            "type": "server_error",
            "code": _text(reason),
            "message": _text(message) or _text(reason),
        },
    }


def realtime_status(status: Any) -> str:
    """The Realtime response status of a native one (interrupted is cancelled there)."""
    if status in ("completed", "failed", "incomplete", "cancelled"):
        return str(status)
    return "cancelled"


def response_object(
    config: SessionConfig,
    response_id: str,
    status: str,
    details: dict[str, Any] | None,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    *,
    modalities: tuple[str, ...] | None = None,
    max_output_tokens: int | str | None = None,
) -> dict[str, Any]:
    """A complete ``RealtimeResponse`` (``modalities`` and ``max_output_tokens``: its
    ``response.create``'s, when they are not the session's)."""
    return {
        "object": "realtime.response",
        "id": response_id,
        "status": status,
        "status_details": details,
        "output": output,
        "conversation_id": f"conv_{config.session_id}",
        "output_modalities": list(modalities or config.output_modalities),
        "max_output_tokens": config.max_output_tokens
        if max_output_tokens is None
        else max_output_tokens,
        "audio": {"output": {"format": dict(PCM_FORMAT), "voice": config.voice}},
        "usage": usage,
        "metadata": None,
    }


def arguments_text(item: OutputItem, arguments: Any) -> str:
    """A call's arguments as JSON text: as the model wrote them, else re-encoded."""
    written = "".join(item.arguments)
    if written:
        return written
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
