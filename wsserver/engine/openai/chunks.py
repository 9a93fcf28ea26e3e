"""One streamed ``chat.completion.chunk`` read into what a generation needs of it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from wsserver.engine.openai.errors import UpstreamFailure, UpstreamProtocolError

DONE = "[DONE]"


@dataclass(frozen=True, slots=True)
class ChunkDelta:
    """The first choice's delta of one chunk, and the usage it carried."""

    content: str = ""
    tool_calls: Any = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def parse_chunk(data: str) -> ChunkDelta:
    """``data`` of one event as a :class:`ChunkDelta`; an in-stream error raises."""
    try:
        chunk = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise UpstreamProtocolError("upstream sent an event that is not json") from exc
    if not isinstance(chunk, dict):
        raise UpstreamProtocolError("upstream sent an event that is not a json object")
    error = chunk.get("error")
    if error is not None:
        # llama.cpp and vLLM report a failure that happens mid-stream as an event.
        message = error.get("message") if isinstance(error, dict) else error
        raise UpstreamFailure(f"upstream reported an error: {message}")
    prompt_tokens = completion_tokens = None
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        prompt_tokens = _count(usage.get("prompt_tokens"))
        completion_tokens = _count(usage.get("completion_tokens"))
    choices = chunk.get("choices")
    if not choices:
        return ChunkDelta(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise UpstreamProtocolError("upstream sent choices that are not a list of objects")
    choice = choices[0]
    delta = choice.get("delta") or {}
    if not isinstance(delta, dict):
        raise UpstreamProtocolError("upstream sent a delta that is not an object")
    content = delta.get("content")
    if content is not None and not isinstance(content, str):
        raise UpstreamProtocolError("upstream sent content that is not text")
    finish = choice.get("finish_reason")
    return ChunkDelta(
        content=content or "",
        tool_calls=delta.get("tool_calls") or None,
        finish_reason=finish if isinstance(finish, str) else None,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
