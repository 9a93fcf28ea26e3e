"""The ``local`` engine: llama.cpp's server in this process, driven over loopback.

The embedded server (:mod:`wsserver.engine.llama_server`) is just another
OpenAI-compatible upstream: the OpenAI engine streams from it, aborts by closing the
stream (llama.cpp cancels the task and frees the slot), and counts usage from its final
chunk. Starting loads the model (seconds); closing frees it.
"""

from __future__ import annotations

import dataclasses

from protocol.generation import GenerationRequest
from wsserver.engine.base import GenerationSink
from wsserver.engine.llama_server import LlamaServer, LlamaServerConfig
from wsserver.engine.openai.config import OpenAIEngineConfig
from wsserver.engine.openai.engine import OpenAICompatibleEngine
from wsserver.engine.openai.generation import OpenAIGeneration


class LocalEngine:
    """An embedded llama.cpp server and the OpenAI engine in front of it."""

    def __init__(self, server: LlamaServerConfig, upstream: OpenAIEngineConfig) -> None:
        self.server = LlamaServer(server)
        self._upstream_config = upstream
        self._engine: OpenAICompatibleEngine | None = None

    @property
    def engine(self) -> OpenAICompatibleEngine:
        """The OpenAI engine over loopback (after :meth:`start`)."""
        if self._engine is None:
            raise RuntimeError("the local engine is not started")
        return self._engine

    async def start(self) -> None:
        if self._engine is not None:
            return
        await self.server.start()
        config = dataclasses.replace(
            self._upstream_config,
            base_url=self.server.base_url,
            # The server queues past its slots itself; streaming more at once than it
            # decodes only moves the wait inside it.
            max_concurrency=self.server.config.parallel,
            api_key=None,
        )
        engine = OpenAICompatibleEngine(config)
        await engine.start()
        self._engine = engine

    async def close(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            await engine.close()
        await self.server.stop()

    def submit(self, request: GenerationRequest, sink: GenerationSink) -> OpenAIGeneration:
        return self.engine.submit(request, sink)

    def stats(self) -> dict[str, int]:
        return self._engine.stats() if self._engine is not None else {"active": 0, "queued": 0}
