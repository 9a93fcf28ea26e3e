"""The baseline: the same local engine called directly, in this process, with no worker.

The engine (llama.cpp's server in process, the OpenAI-compatible engine over loopback)
is the one ``wsserver serve --engine local`` runs; here a sink timestamps its output.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from loadtest.engines.config import QUESTIONS, EnginesConfig
from loadtest.engines.slots import seconds_until_idle
from protocol.conversation import Turn
from protocol.generation import FinishReason, GenerationRequest, OutputChunk
from wsserver.engine.llama_server import LlamaServerConfig
from wsserver.engine.local import LocalEngine
from wsserver.engine.openai.config import OpenAIEngineConfig

STORY = "Tell me a long story about a dragon."
"""What the interrupted answers are asked (long enough to be cut)."""


class TimedSink:
    """Takes a generation's output and notes when its first text came."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.first_text: float | None = None
        self.tokens = 0
        self.deltas = 0
        self.text: list[str] = []
        self.reason: FinishReason | None = None
        self.finished = asyncio.Event()
        self.progressed = asyncio.Event()

    def on_output(self, chunk: OutputChunk) -> None:
        if chunk.text:
            if self.first_text is None:
                self.first_text = time.perf_counter()
            self.deltas += 1
            self.text.append(chunk.text)
        self.tokens += chunk.tokens
        self.progressed.set()

    def on_finish(self, reason: FinishReason) -> None:
        self.reason = reason
        self.finished.set()

    @property
    def ttft(self) -> float | None:
        """Seconds from submit to the first text."""
        return None if self.first_text is None else self.first_text - self.started


def local_engine(config: EnginesConfig, parallel: int) -> LocalEngine:
    """The engine ``wsserver serve --engine local`` builds, at temperature 0."""
    return LocalEngine(
        LlamaServerConfig(threads=config.threads, parallel=parallel, context=2048 * parallel),
        OpenAIEngineConfig(temperature=0.0),
    )


async def _session(
    engine: LocalEngine, config: EnginesConfig, number: int, out: dict[str, list[Any]]
) -> None:
    prompt: list[Turn] = []
    for question in range(config.questions):
        prompt.append(Turn("user", QUESTIONS[(number + question) % len(QUESTIONS)]))
        sink = TimedSink()
        request = GenerationRequest(f"direct-{number}-{question}", tuple(prompt), config.max_tokens)
        engine.submit(request, sink)
        await asyncio.wait_for(sink.finished.wait(), 120)
        if sink.ttft is not None:
            out["ttft_s"].append(sink.ttft)
        out["tokens"].append(sink.tokens)
        out["finish"].append(str(sink.reason))
        # The worker keeps the answer in the history: so does this path.
        prompt.append(Turn("assistant", "".join(sink.text)))


async def measure(config: EnginesConfig, phases: tuple[str, ...]) -> dict[str, Any]:
    """The text and interrupt phases on one engine (one model load), in turn."""
    engine = local_engine(config, config.sessions)
    await engine.start()
    results: dict[str, Any] = {}
    try:
        if "text" in phases:
            results["text"] = await measure_text(engine, config)
        if "interrupt" in phases:
            results["interrupt"] = await measure_interrupts(engine, config)
    finally:
        await engine.close()
    return results


async def measure_text(engine: LocalEngine, config: EnginesConfig) -> dict[str, Any]:
    """N concurrent sessions of Q questions each, straight into the engine."""
    out: dict[str, list[Any]] = {"ttft_s": [], "tokens": [], "finish": []}
    began = time.perf_counter()
    await asyncio.gather(*(_session(engine, config, n, out) for n in range(config.sessions)))
    wall = time.perf_counter() - began
    return {**out, "wall_s": wall, "tokens_per_s": sum(out["tokens"]) / wall}


async def measure_interrupts(engine: LocalEngine, config: EnginesConfig) -> dict[str, Any]:
    """K answers aborted after a few deltas, one at a time: abort -> no slot decoding."""
    idle: list[float] = []
    missed = 0
    async with httpx.AsyncClient(trust_env=False) as client:
        for number in range(config.interrupts):
            sink = TimedSink()
            prompt = (Turn("user", STORY),)
            request = GenerationRequest(f"cut-{number}", prompt, config.max_tokens * 8)
            generation = engine.submit(request, sink)
            while sink.deltas < config.interrupt_after and not sink.finished.is_set():
                sink.progressed.clear()
                await asyncio.wait_for(sink.progressed.wait(), 60)
            if sink.finished.is_set():
                missed += 1  # it ended by itself before the cut
                continue
            since = time.perf_counter()
            generation.abort()
            key = engine.server.config.api_key or ""
            seconds = await seconds_until_idle(client, engine.server.address or "", key, since)
            if seconds is None:
                missed += 1
            else:
                idle.append(seconds)
    return {"idle_s": idle, "not_measured": missed}
