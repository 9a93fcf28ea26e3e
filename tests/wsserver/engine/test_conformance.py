"""The Engine contract, run against every engine: the simulated one, and the OpenAI
engine in front of a real llama.cpp server (SmolLM2, shared by the test session).

Each engine answers a plain request with ``answer_tokens`` one-token chunks and one
finish (the simulated engine stops by itself after 30; a real model can't promise a
length, so it is asked for a long story and cut by ``max_tokens`` at 12), and takes 4
requests at once. "Nothing more" is checked behind a barrier: another request
submitted after the event and run to its end, so the engine had every chance to
misbehave.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

import pytest

from protocol.conversation import Turn
from wsserver.engine.base import (
    Engine,
    EngineOverloaded,
    FinishReason,
    Generation,
    GenerationRequest,
    OutputChunk,
    QueueSink,
)
from wsserver.engine.openai.config import OpenAIEngineConfig
from wsserver.engine.openai.engine import OpenAICompatibleEngine
from wsserver.engine.pipeline.engine import PipelineEngine
from wsserver.engine.simulated import SimulatedEngine, SimulatedEngineConfig

CAPACITY = 4


@dataclass(frozen=True)
class Subject:
    """An engine under test and what its plain answer is."""

    engine: Engine
    answer_tokens: int
    finish: FinishReason
    """How a plain request ends."""
    prompt: str = "hello"
    max_tokens: int = 1000


# Every engine runs this suite.
@pytest.fixture(params=["simulated", "openai", "pipeline"])
async def subject(request: pytest.FixtureRequest) -> AsyncIterator[Subject]:
    implementation: Engine
    if request.param in ("simulated", "pipeline"):
        config = SimulatedEngineConfig(
            decode_rate=500, slots=2, max_queue=CAPACITY - 2, answer_tokens=30
        )
        implementation = SimulatedEngine(config)
        if request.param == "pipeline":
            # The voice pipeline over the simulated LLM, with no speech parts: the suite's
            # text requests go through it to the LLM (its spoken requests: pipeline/).
            implementation = PipelineEngine(implementation)
        chosen = Subject(implementation, 30, FinishReason.STOP)
    else:
        llama = request.getfixturevalue("llama_server")
        upstream = OpenAIEngineConfig(
            base_url=llama.base_url, temperature=0.0, max_concurrency=2, max_queue=CAPACITY - 2
        )
        implementation = OpenAICompatibleEngine(upstream)
        chosen = Subject(
            implementation, 12, FinishReason.LENGTH, "Write a long story about a dragon.", 12
        )
    await implementation.start()
    yield chosen
    await implementation.close()


@pytest.fixture
def engine(subject: Subject) -> Engine:
    return subject.engine


_SUBJECT: list[Subject] = []


@pytest.fixture(autouse=True)
def _current(subject: Subject) -> Iterator[None]:
    # The helpers below build each engine's plain request.
    _SUBJECT.append(subject)
    yield
    _SUBJECT.pop()


def _request(rid: str, text: str | None = None, max_tokens: int | None = None) -> GenerationRequest:
    subject = _SUBJECT[-1]
    return GenerationRequest(
        rid,
        [Turn("user", text or subject.prompt)],
        max_tokens if max_tokens is not None else subject.max_tokens,
    )


@dataclass
class RecordingSink:
    """Every call the engine makes, in order; ``on_chunk`` runs inside ``on_output``."""

    calls: list[OutputChunk | FinishReason] = field(default_factory=list)
    on_chunk: Callable[[int], None] | None = None

    def on_output(self, chunk: OutputChunk) -> None:
        self.calls.append(chunk)
        if self.on_chunk is not None:
            self.on_chunk(len(self.chunks))

    def on_finish(self, reason: FinishReason) -> None:
        self.calls.append(reason)

    @property
    def chunks(self) -> list[OutputChunk]:
        return [call for call in self.calls if isinstance(call, OutputChunk)]

    @property
    def finishes(self) -> list[FinishReason]:
        return [call for call in self.calls if isinstance(call, FinishReason)]


async def _run_to_end(engine: Engine, rid: str) -> tuple[Generation, list[OutputChunk]]:
    """Submit a plain request and read it to its finish (also the barrier)."""
    sink = QueueSink()
    generation = engine.submit(_request(rid), sink)
    chunks = [chunk async for chunk in sink.chunks(timeout=30)]
    assert sink.finish_reason is not None, "the request never finished"
    return generation, chunks


async def test_chunks_then_exactly_one_finish(engine: Engine, subject: Subject) -> None:
    sink = RecordingSink()
    generation = engine.submit(_request("a"), sink)
    await _run_to_end(engine, "barrier-1")
    await _run_to_end(engine, "barrier-2")
    assert sink.finishes == [subject.finish]
    assert sink.calls[-1] is subject.finish, "output after the finish"
    assert len(sink.chunks) == subject.answer_tokens
    assert generation.finish_reason is subject.finish


async def test_abort_stops_output_at_once_and_reports_nothing_more(engine: Engine) -> None:
    generations: list[Generation] = []
    # Aborted from inside the sink, on its third chunk: not one more chunk may come.
    sink = RecordingSink(on_chunk=lambda count: generations[0].abort() if count == 3 else None)
    generations.append(engine.submit(_request("a"), sink))
    await _run_to_end(engine, "barrier")
    assert len(sink.chunks) == 3
    assert sink.finishes == [], "an aborted request reports no finish"
    generation = generations[0]
    assert generation.finish_reason is FinishReason.ABORTED
    assert generation.generated_tokens == 3


async def test_abort_between_steps_and_after_the_finish(engine: Engine, subject: Subject) -> None:
    started = asyncio.Event()
    sink = RecordingSink(on_chunk=lambda count: started.set() if count == 2 else None)
    generation = engine.submit(_request("a"), sink)
    await asyncio.wait_for(started.wait(), 5)
    # Aborted from outside, between two steps: what was pushed by now is all there is.
    generation.abort()
    pushed = len(sink.chunks)
    await _run_to_end(engine, "barrier")
    assert len(sink.chunks) == pushed
    assert sink.finishes == []
    assert generation.generated_tokens == pushed
    assert generation.finish_reason is FinishReason.ABORTED
    # Aborting a finished request changes nothing.
    done, _ = await _run_to_end(engine, "b")
    done.abort()
    assert done.finish_reason is subject.finish


async def test_overload_raises_engine_overloaded(engine: Engine) -> None:
    running = [engine.submit(_request(f"r{i}"), RecordingSink()) for i in range(CAPACITY)]
    with pytest.raises(EngineOverloaded):
        engine.submit(_request("one too many"), RecordingSink())
    # An abort frees a place at once.
    running[0].abort()
    engine.submit(_request("now it fits"), RecordingSink())


async def test_a_length_limited_answer_ends_with_length(engine: Engine) -> None:
    sink = QueueSink()
    generation = engine.submit(_request("a", max_tokens=5), sink)
    chunks = [chunk async for chunk in sink.chunks(timeout=30)]
    assert len(chunks) == 5
    assert sink.finish_reason is FinishReason.LENGTH
    assert generation.generated_tokens == 5


async def test_token_counts(engine: Engine, subject: Subject) -> None:
    short = engine.submit(_request("short", "hi"), RecordingSink())
    long = engine.submit(_request("long", "a much longer prompt than the other " * 10), QueueSink())
    assert 0 < short.input_tokens < long.input_tokens
    generation, chunks = await _run_to_end(engine, "counted")
    answer = subject.answer_tokens
    assert generation.generated_tokens == sum(chunk.tokens for chunk in chunks) == answer
    assert engine.stats()["tokens_generated"] >= answer


async def test_a_failing_sink_ends_its_request_with_error(engine: Engine, subject: Subject) -> None:
    class Failing(RecordingSink):
        def on_output(self, chunk: OutputChunk) -> None:
            super().on_output(chunk)
            raise RuntimeError("client went away")

    sink = Failing()
    generation = engine.submit(_request("a"), sink)
    _, chunks = await _run_to_end(engine, "others go on")
    assert len(chunks) == subject.answer_tokens
    assert len(sink.chunks) == 1
    assert sink.finishes == [FinishReason.ERROR]
    assert generation.finish_reason is FinishReason.ABORTED
