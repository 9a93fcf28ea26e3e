"""Run one request through an OpenAI engine and keep everything it pushed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from protocol.conversation import Turn
from protocol.generation import (
    FinishReason,
    GenerationRequest,
    OutputChunk,
    ToolCallFragment,
)
from wsserver.engine.base import QueueSink
from wsserver.engine.openai.config import OpenAIEngineConfig
from wsserver.engine.openai.engine import OpenAICompatibleEngine
from wsserver.engine.openai.generation import OpenAIGeneration

WEATHER = {
    "name": "get_weather",
    "description": "Weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@dataclass
class Outcome:
    generation: OpenAIGeneration
    chunks: list[OutputChunk]
    finish: FinishReason | None

    @property
    def text(self) -> str:
        return "".join(chunk.text for chunk in self.chunks)

    @property
    def fragments(self) -> list[ToolCallFragment]:
        return [chunk.tool_call for chunk in self.chunks if chunk.tool_call is not None]

    def calls(self) -> list[tuple[str, str, str]]:
        """(id, name, whole arguments) of each completed call, in order."""
        arguments: dict[str, str] = {}
        names: dict[str, str] = {}
        done: list[str] = []
        for fragment in self.fragments:
            assert fragment.call_id not in done, "a piece after its call ended"
            if fragment.complete:
                done.append(fragment.call_id)
            else:
                arguments[fragment.call_id] = arguments.get(fragment.call_id, "") + (
                    fragment.arguments
                )
                names[fragment.call_id] = fragment.name
        return [(cid, names[cid], arguments[cid]) for cid in done]


@asynccontextmanager
async def openai_engine(base_url: str, **options: Any) -> AsyncIterator[OpenAICompatibleEngine]:
    options = {"temperature": 0.0, "backoff_base": 0.05, **options}
    engine = OpenAICompatibleEngine(OpenAIEngineConfig(base_url=base_url, **options))
    await engine.start()
    try:
        yield engine
    finally:
        await engine.close()


def ask(text: str = "What is the capital of France?", max_tokens: int = 16, **kw: Any) -> Any:
    return GenerationRequest(kw.pop("request_id", "req"), [Turn("user", text)], max_tokens, **kw)


async def run(
    engine: OpenAICompatibleEngine, request: GenerationRequest, timeout: float = 30
) -> Outcome:
    sink = QueueSink()
    generation = engine.submit(request, sink)
    chunks = [chunk async for chunk in sink.chunks(timeout=timeout)]
    return Outcome(generation, chunks, sink.finish_reason)
