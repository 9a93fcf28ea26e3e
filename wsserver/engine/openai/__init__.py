"""The OpenAI-compatible engine: streams ``/v1/chat/completions`` from an upstream server.

Any server that speaks the chat-completions API with ``stream: true`` (vLLM, llama.cpp's
server, Ollama, LM Studio, OpenAI) serves as the model. See ``docs/ENGINES.md``. The
engine itself is ``wsserver.engine.openai.engine.OpenAICompatibleEngine``; this package
imports nothing at its top, so the settings (``config``) load without the HTTP client
installed (the ``upstream`` extra).
"""
