"""The OpenAI-compatible engine: streams ``/v1/chat/completions`` from an upstream server.

Any server that speaks the chat-completions API with ``stream: true`` (vLLM, llama.cpp's
server, Ollama, LM Studio, OpenAI) serves as the model. See ``docs/ENGINES.md``.
"""

from __future__ import annotations

from wsserver.engine.openai.config import OpenAIEngineConfig
from wsserver.engine.openai.engine import OpenAICompatibleEngine

__all__ = ["OpenAICompatibleEngine", "OpenAIEngineConfig"]
