"""The OpenAI engine against a real llama.cpp server (SmolLM2, one thread, temperature 0)."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

from protocol.generation import FinishReason
from tests.llama_server import LlamaServerProcess
from tests.processes import eventually
from tests.wsserver.engine.openai.running import ask, openai_engine, run
from wsserver.engine.base import QueueSink
from wsserver.engine.openai.messages import chat_messages


def _post(server: LlamaServerProcess, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        server.address + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def _prompt_tokens(server: LlamaServerProcess, messages: list[dict[str, Any]]) -> int:
    """The server's own count of a prompt: its template applied, then tokenized."""
    prompt = _post(server, "/apply-template", {"messages": messages})["prompt"]
    return len(_post(server, "/tokenize", {"content": prompt, "add_special": True})["tokens"])


async def test_streamed_text_and_usage_add_up(llama_server: LlamaServerProcess) -> None:
    request = ask("What is the capital of France?", max_tokens=8)
    async with openai_engine(llama_server.base_url) as engine:
        outcome = await run(engine, request)
        stats = engine.stats()
    assert outcome.finish is FinishReason.LENGTH
    assert outcome.text.strip(), "no text streamed"
    assert len(outcome.chunks) > 1, "the answer came in one piece, not streamed"
    generation = outcome.generation
    # Usage from the usage chunk: every one of the 8 tokens streamed as a delta.
    assert generation.generated_tokens == 8 == sum(c.tokens for c in outcome.chunks)
    expected = await asyncio.to_thread(_prompt_tokens, llama_server, chat_messages(request.prompt))
    assert generation.input_tokens == expected
    assert stats["tokens_generated"] == 8 and stats["requests"] == 1


async def test_a_prefix_is_continued_not_answered_again(llama_server: LlamaServerProcess) -> None:
    async with openai_engine(llama_server.base_url) as engine:
        whole = await run(engine, ask(max_tokens=12))
        cut = len(whole.chunks) // 2
        prefix = "".join(chunk.text for chunk in whole.chunks[:cut])
        rest = await run(engine, ask(max_tokens=12, prefix=prefix))
    # Greedy decoding: the continuation is the rest of the same answer.
    assert (prefix + rest.text).startswith(whole.text[: len(whole.text) - 4])
    assert not rest.text.startswith(prefix)


async def test_abort_frees_the_upstream_slot(llama_server: LlamaServerProcess) -> None:
    async with openai_engine(llama_server.base_url) as engine:
        sink = QueueSink()
        generation = engine.submit(ask("Write a long story about a dragon.", 400), sink)
        seen = 0
        async for _ in sink.chunks(timeout=30):
            seen += 1
            if seen == 3:
                break
        assert await asyncio.to_thread(llama_server.busy) == 1
        generation.abort()
        pushed = generation.generated_tokens
        await eventually(lambda: llama_server.busy() == 0, timeout=10)
        assert generation.finish_reason is FinishReason.ABORTED
        assert generation.generated_tokens == pushed == 3, "output after the abort"
        assert engine.stats()["aborted"] == 1
    assert "cancel task" in llama_server.log()
