"""The simulated engine: shared decode loop, slots, queue, prefill, determinism, abort."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from protocol.conversation import Turn
from wsserver.engine.base import EngineOverloaded, FinishReason, GenerationRequest
from wsserver.engine.simulated import SimulatedEngine, SimulatedEngineConfig, count_prompt_tokens


def _request(rid: str, text: str = "hello", max_tokens: int = 1000) -> GenerationRequest:
    return GenerationRequest(rid, [Turn("user", text)], max_tokens)


@pytest.fixture
async def engine() -> AsyncIterator[SimulatedEngine]:
    engine = SimulatedEngine(
        SimulatedEngineConfig(decode_rate=500, slots=2, max_queue=2, answer_tokens=30)
    )
    await engine.start()
    yield engine
    await engine.close()


async def _collect(generation: object) -> str:
    return "".join([chunk.text async for chunk in generation])  # type: ignore[attr-defined]


async def test_deterministic_text_and_counts(engine: SimulatedEngine) -> None:
    first = engine.submit(_request("a", "same prompt"))
    second = engine.submit(_request("b", "same prompt"))
    text_a, text_b = await asyncio.gather(_collect(first), _collect(second))
    assert text_a == text_b
    assert len(text_a.split()) == 30
    assert first.generated_tokens == 30
    assert first.finish_reason is FinishReason.STOP
    assert engine.generated_by_request == {"a": 30, "b": 30}
    other = engine.submit(_request("c", "another prompt"))
    assert await _collect(other) != text_a


async def test_requests_share_decode_steps(engine: SimulatedEngine) -> None:
    steps_before = engine.steps
    await asyncio.gather(
        _collect(engine.submit(_request("a"))), _collect(engine.submit(_request("b")))
    )
    steps = engine.steps - steps_before
    # Continuous batching: 60 tokens in about 30 steps, not 60.
    assert steps < 45
    assert engine.tokens_generated == 60


async def test_slots_queue_and_abort_frees_a_slot_at_once(engine: SimulatedEngine) -> None:
    running = [engine.submit(_request(f"r{i}")) for i in range(2)]
    queued = [engine.submit(_request(f"q{i}")) for i in range(2)]
    assert engine.stats()["running"] == 2
    assert engine.stats()["queued"] == 2
    with pytest.raises(EngineOverloaded):
        engine.submit(_request("overflow"))
    running[0].abort()
    # The slot passes to the first queued request immediately, not at the next step.
    assert engine.stats()["running"] == 2
    assert engine.stats()["queued"] == 1
    assert running[0].finish_reason is FinishReason.ABORTED
    generated = running[0].generated_tokens
    await asyncio.sleep(0.05)
    assert running[0].generated_tokens == generated
    assert await _collect(running[0]) == ""
    for generation in [running[1], *queued]:
        generation.abort()
    queued[1].abort()  # idempotent


async def test_max_output_tokens_limits_with_length_reason(engine: SimulatedEngine) -> None:
    generation = engine.submit(_request("short", max_tokens=7))
    text = await _collect(generation)
    assert len(text.split()) == 7
    assert generation.finish_reason is FinishReason.LENGTH


async def test_prefill_grows_with_prompt_length() -> None:
    engine = SimulatedEngine(
        SimulatedEngineConfig(prefill_base_s=0.01, prefill_per_token_s=0.001, answer_tokens=1)
    )
    await engine.start()
    try:
        loop = asyncio.get_running_loop()
        short = engine.submit(_request("s", "hi"))
        before = loop.time()
        long = engine.submit(_request("l", "word " * 200))
        assert long.input_tokens == count_prompt_tokens([Turn("user", "word " * 200)]) == 204
        assert long.ready_at - before == pytest.approx(0.01 + 0.204, abs=0.01)
        assert long.ready_at > short.ready_at
        await asyncio.gather(_collect(short), _collect(long))
    finally:
        await engine.close()
