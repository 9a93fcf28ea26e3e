"""One streamed ``chat.completion.chunk`` read into what a generation needs of it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from protocol.unicode_text import valid_text
from wsserver.engine.openai.errors import UpstreamFailure, UpstreamProtocolError, sanitize

DONE = "[DONE]"

MAX_PROMPT_TOKENS = 1 << 24
"""A prompt count past any model's context is not believed (it would reach the client's
``response.done`` and the usage ledger as sent)."""


@dataclass(frozen=True, slots=True)
class ChunkDelta:
    """The first choice's delta of one chunk, and the usage it carried."""

    content: str = ""
    thinking: bool = False
    """It carried reasoning text (``reasoning_content``, ``reasoning``): the model is
    working, though nothing of it is an answer."""
    tool_calls: Any = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def parse_chunk(data: str, secret: str | None = None) -> ChunkDelta:
    """``data`` of one event as a :class:`ChunkDelta`; an in-stream error raises.

    Text comes out valid Unicode (a lone surrogate, which JSON can spell, replaced);
    an error's message comes out clean and without ``secret``.
    """
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
        raise UpstreamFailure(f"upstream reported an error: {sanitize(str(message), secret)}")
    prompt_tokens = completion_tokens = None
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        prompt_tokens = _count(usage.get("prompt_tokens"))
        if prompt_tokens is not None and prompt_tokens > MAX_PROMPT_TOKENS:
            prompt_tokens = None
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
    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
    return ChunkDelta(
        content=valid_text(content) if content else "",
        thinking=isinstance(reasoning, str) and bool(reasoning),
        tool_calls=delta.get("tool_calls") or None,
        finish_reason=finish if isinstance(finish, str) else None,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
