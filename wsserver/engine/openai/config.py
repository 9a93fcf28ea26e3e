"""How the OpenAI-compatible engine reaches its upstream, and how patient it is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class OpenAIEngineConfig:
    """The upstream, its timeouts, retries and the engine's capacity."""

    base_url: str = "http://127.0.0.1:8000/v1"
    """The API root; requests go to ``{base_url}/chat/completions``."""
    model: str = "default"
    """The ``model`` field of every request."""
    api_key: str | None = field(default=None, repr=False)
    """Sent as ``Authorization: Bearer ...``; never logged (kept out of ``repr``)."""
    connect_timeout: float = 5.0
    """Seconds to open the TCP (and TLS) connection."""
    first_token_timeout: float = 60.0
    """Seconds from sending the request to the first text or tool-call delta (prefill)."""
    chunk_timeout: float = 30.0
    """Seconds the stream may stay silent between two chunks once it runs."""
    retries: int = 2
    """Attempts after the first, only before the first token (refused, 5xx, 429, timeout)."""
    backoff_base: float = 0.25
    """First retry delay in seconds; doubled per retry."""
    backoff_max: float = 5.0
    """Cap on one retry delay, a ``Retry-After`` included (a longer one fails instead)."""
    max_concurrency: int = 8
    """Requests streaming from the upstream at once; the rest wait in the queue."""
    max_queue: int = 256
    """Requests that may wait for a place before a submit raises ``EngineOverloaded``."""
    temperature: float | None = None
    """Sampling temperature; ``None`` leaves the upstream's default."""
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """The field that carries the output cap (newer OpenAI models want the second)."""
    continue_final_message: bool = False
    """With a prefix, also send vLLM's ``continue_final_message`` (and no generation
    prompt): vLLM otherwise answers after the final assistant message instead of
    continuing it. llama.cpp continues it without being asked."""
    extra_body: dict[str, Any] = field(default_factory=dict)
    """Fields merged into every request body (``top_p``, ``seed``, a server's own options)."""
    max_line_bytes: int = 1 << 20
    """Longest SSE line accepted; a longer one fails the request (bounded memory)."""
    max_tool_arguments_bytes: int = 1 << 20
    """Longest arguments of one tool call accepted."""
    rewrite_body: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """A last change to each request body (the local engine's small-model tool aid,
    :mod:`wsserver.engine.local_tools`); ``None`` sends the body as built."""
