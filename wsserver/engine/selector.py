"""Build the engine a worker's settings name.

Settings hold only names and numbers; this is the one place that turns an engine's
name into an implementation, so configuration never imports one. A new engine adds
its name here (and to the ``engine`` setting's choices) and runs the shared
conformance suite, ``tests/wsserver/engine/test_conformance.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wsserver.engine.base import Engine, EngineError
from wsserver.engine.llama_server import LlamaServerConfig
from wsserver.engine.openai.config import OpenAIEngineConfig


class UnknownEngine(EngineError, ValueError):
    """A name that is not one of :data:`ENGINE_NAMES`."""


class EngineUnavailable(EngineError):
    """An engine whose optional dependencies are not installed."""


ENGINE_NAMES = ("simulated", "openai", "local")
"""Engines a worker can be configured with."""


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """How fast and how big the engine is (the simulated engine's knobs)."""

    decode_rate: float = 50.0
    """Tokens per second per request."""
    slots: int = 256
    """Requests decoded together; the rest queue."""
    max_queue: int = 10_000
    """Requests that may wait for a slot before a submit is refused."""
    prefill_per_token_ms: float = 0.1
    """Prefill time per prompt token, in milliseconds."""
    answer_tokens: int = 0
    """Natural answer length; 0 derives 40-120 tokens from the prompt."""
    upstream: OpenAIEngineConfig = field(default_factory=OpenAIEngineConfig)
    """The ``openai`` engine's upstream (and the ``local`` engine's timeouts, retries)."""
    local: LlamaServerConfig = field(default_factory=LlamaServerConfig)
    """The ``local`` engine's embedded llama.cpp server."""


def open_engine(name: str, options: EngineOptions | None = None) -> Engine:
    """The engine called ``name``, built with ``options``; else :class:`UnknownEngine`."""
    options = options or EngineOptions()
    if name == "simulated":
        from wsserver.engine.simulated import SimulatedEngine, SimulatedEngineConfig

        return SimulatedEngine(
            SimulatedEngineConfig(
                decode_rate=options.decode_rate,
                slots=options.slots,
                max_queue=options.max_queue,
                prefill_per_token_s=options.prefill_per_token_ms / 1000.0,
                answer_tokens=options.answer_tokens,
            )
        )
    if name in ("openai", "local"):
        try:
            from wsserver.engine.local import LocalEngine
            from wsserver.engine.openai.engine import OpenAICompatibleEngine
        except ImportError as exc:
            extra = "upstream" if name == "openai" else "local"
            raise EngineUnavailable(
                f"the {name} engine needs {exc.name}: pip install 'wsserver[{extra}]'"
            ) from exc
        if name == "openai":
            return OpenAICompatibleEngine(options.upstream)
        return LocalEngine(options.local, options.upstream)
    raise UnknownEngine(f"unknown engine {name!r}: use one of {', '.join(ENGINE_NAMES)}")
