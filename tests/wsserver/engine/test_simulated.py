"""The simulated engine: shared decode loop, slots, queue, prefill, determinism, abort."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from protocol.conversation import Turn
from wsserver.engine.base import EngineOverloaded, FinishReason, GenerationRequest, QueueSink
from wsserver.engine.scripted import count_prompt_tokens
from wsserver.engine.simulated import SimulatedEngine, SimulatedEngineConfig, SimulatedGeneration


def _request(
    rid: str, text: str = "hello", max_tokens: int = 1000, prefix: str = ""
) -> GenerationRequest:
    return GenerationRequest(rid, [Turn("user", text)], max_tokens, prefix)


@pytest.fixture
async def engine() -> AsyncIterator[SimulatedEngine]:
    engine = SimulatedEngine(
        SimulatedEngineConfig(decode_rate=500, slots=2, max_queue=2, answer_tokens=30)
    )
    await engine.start()
    yield engine
    await engine.close()


class Run:
    """A submitted request and the sink collecting its output."""

    def __init__(self, engine: SimulatedEngine, request: GenerationRequest) -> None:
        self.sink = QueueSink()
        self.generation: SimulatedGeneration = engine.submit(request, self.sink)

    async def text(self) -> str:
        return "".join([chunk.text async for chunk in self.sink.chunks(timeout=2)])


async def test_deterministic_text_and_counts(engine: SimulatedEngine) -> None:
    first = Run(engine, _request("a", "same prompt"))
    second = Run(engine, _request("b", "same prompt"))
    text_a, text_b = await asyncio.gather(first.text(), second.text())
    assert text_a == text_b
    assert len(text_a.split()) == 30
    assert first.generation.generated_tokens == 30
    assert first.generation.finish_reason is FinishReason.STOP
    assert first.sink.finish_reason is FinishReason.STOP
    assert engine.generated_by_request == {"a": 30, "b": 30}
    assert await Run(engine, _request("c", "another prompt")).text() != text_a


async def test_continuation_picks_up_where_the_prefix_ends(engine: SimulatedEngine) -> None:
    whole = await Run(engine, _request("a", "same prompt")).text()
    words = whole.split(" ")
    prefix = " ".join(words[:12])
    rest = await Run(engine, _request("b", "same prompt", prefix=prefix)).text()
    assert prefix + rest == whole


async def test_requests_share_decode_steps(engine: SimulatedEngine) -> None:
    steps_before = engine.steps
    await asyncio.gather(Run(engine, _request("a")).text(), Run(engine, _request("b")).text())
    steps = engine.steps - steps_before
    # Continuous batching: 60 tokens in about 30 steps, not 60.
    assert steps < 45
    assert engine.tokens_generated == 60


async def test_slots_queue_and_abort_frees_a_slot_at_once(engine: SimulatedEngine) -> None:
    running = [Run(engine, _request(f"r{i}")) for i in range(2)]
    queued = [Run(engine, _request(f"q{i}")) for i in range(2)]
    assert engine.stats()["running"] == 2
    assert engine.stats()["queued"] == 2
    with pytest.raises(EngineOverloaded):
        Run(engine, _request("overflow"))
    running[0].generation.abort()
    # The slot passes to the first queued request immediately, not at the next step.
    assert engine.stats()["running"] == 2
    assert engine.stats()["queued"] == 1
    assert running[0].generation.finish_reason is FinishReason.ABORTED
    generated = running[0].generation.generated_tokens
    await asyncio.sleep(0.05)
    assert running[0].generation.generated_tokens == generated
    assert running[0].sink.finish_reason is None, "an aborted generation reports nothing"
    for run in [running[1], *queued]:
        run.generation.abort()
    queued[1].generation.abort()  # idempotent


async def test_max_output_tokens_limits_with_length_reason(engine: SimulatedEngine) -> None:
    run = Run(engine, _request("short", max_tokens=7))
    assert len((await run.text()).split()) == 7
    assert run.generation.finish_reason is FinishReason.LENGTH


async def test_a_failing_sink_does_not_stop_the_loop(engine: SimulatedEngine) -> None:
    class Broken(QueueSink):
        def on_output(self, chunk: object) -> None:
            raise RuntimeError("boom")

    sink = Broken()
    broken = engine.submit(_request("bad"), sink)
    healthy = Run(engine, _request("good"))
    assert len((await healthy.text()).split()) == 30
    assert broken.finish_reason is FinishReason.ABORTED
    # Its owner still hears that it ended (a response waiting on it must end too).
    assert [chunk async for chunk in sink.chunks(timeout=2)] == []
    assert sink.finish_reason is FinishReason.ERROR


async def test_prefill_grows_with_prompt_length() -> None:
    engine = SimulatedEngine(
        SimulatedEngineConfig(prefill_base_s=0.01, prefill_per_token_s=0.001, answer_tokens=1)
    )
    await engine.start()
    try:
        loop = asyncio.get_running_loop()
        short = Run(engine, _request("s", "hi"))
        before = loop.time()
        long = Run(engine, _request("l", "word " * 200))
        assert long.generation.input_tokens == 204
        assert count_prompt_tokens([Turn("user", "word " * 200)]) == 204
        assert long.generation.ready_at - before == pytest.approx(0.01 + 0.204, abs=0.01)
        assert long.generation.ready_at > short.generation.ready_at
        await asyncio.gather(short.text(), long.text())
    finally:
        await engine.close()
