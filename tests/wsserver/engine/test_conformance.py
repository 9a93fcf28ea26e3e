"""The Engine contract, run against every engine: the simulated one, the OpenAI
engine in front of a real llama.cpp server (SmolLM2, shared by the test session), and
the voice pipeline speaking the simulated LLM's answers with real piper.

Each engine answers a plain request with ``answer_tokens`` one-token chunks and one
finish (the simulated engine stops by itself after 30; a real model can't promise a
length, so it is asked for a long story and cut by ``max_tokens`` at 12), and takes 4
requests at once. "Nothing more" is checked behind a barrier: another request
submitted after the event and run to its end, so the engine had every chance to
misbehave.

The pipeline's plain request asks for a spoken answer (``audio_output``), so its own
generation is under the contract: its chunks are 100 ms pieces of piper's audio, each
with the words that start in it, and a clause's LLM tokens ride on its first piece.
Counts are therefore tokens (``OutputChunk.tokens``), not chunks, and the pipeline's
``generated_tokens`` is the LLM's own count, which may run ahead of what was delivered
(a clause's text waits for its audio).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

import pytest

from protocol.conversation import Turn
from tests.wsserver.speech_models import piper_voice
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
from wsserver.engine.pipeline.clauses import ClauseLimits
from wsserver.engine.pipeline.engine import PipelineConfig, PipelineEngine
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
    audio_output: bool = False
    """The plain request asks for a spoken answer."""
    llm_generated: Callable[[str], int] | None = None
    """The LLM's own count of a request's tokens, for an engine that delivers them
    later than they are generated (the pipeline); unset: each chunk is one token, and
    what was generated is what was delivered."""


# Every engine runs this suite.
@pytest.fixture(params=["simulated", "openai", "pipeline"])
async def subject(request: pytest.FixtureRequest) -> AsyncIterator[Subject]:
    implementation: Engine
    if request.param == "simulated":
        config = SimulatedEngineConfig(
            decode_rate=500, slots=2, max_queue=CAPACITY - 2, answer_tokens=30
        )
        implementation = SimulatedEngine(config)
        chosen = Subject(implementation, 30, FinishReason.STOP)
    elif request.param == "pipeline":
        chosen = _pipeline()
        implementation = chosen.engine
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


def _pipeline() -> Subject:
    """The voice pipeline speaking the simulated LLM's answers with piper (loaded once
    per test process): ten tokens, about 50 characters without punctuation, cut into
    clauses of at most 24 characters, so an answer is three syntheses and about 30
    pieces of audio."""
    voice = piper_voice()  # skips without the voice extra, which the import below needs
    from wsserver.engine.pipeline.piper_voice import PiperTextToSpeech

    # At 50 tokens/s the LLM is still writing when the first clause's audio leaves, so
    # an abort then must stop it too.
    config = SimulatedEngineConfig(
        decode_rate=50, slots=2, max_queue=CAPACITY - 2, answer_tokens=10
    )
    llm = SimulatedEngine(config)
    clauses = ClauseLimits(max_chars=24, first_max_chars=24)
    tts = PiperTextToSpeech(voice, steady=True)
    pipeline = PipelineEngine(llm, tts=tts, config=PipelineConfig(clauses=clauses))
    return Subject(
        pipeline,
        10,
        FinishReason.STOP,
        audio_output=True,
        llm_generated=lambda rid: llm.generated_by_request[rid],
    )


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
        audio_output=subject.audio_output,
    )


def _tokens(chunks: list[OutputChunk]) -> int:
    """Tokens delivered by ``chunks``."""
    return sum(chunk.tokens for chunk in chunks)


def _check_chunks(subject: Subject, chunks: list[OutputChunk]) -> None:
    """Each chunk is what the engine promises: one token of text, or a piece of audio."""
    if subject.audio_output:
        assert all(chunk.audio and chunk.audio_ms > 0 for chunk in chunks), "a piece without audio"
    else:
        assert all(chunk.tokens == 1 for chunk in chunks), "a chunk that is not one token"


def _check_generated(subject: Subject, generation: Generation, rid: str, delivered: int) -> None:
    """``generated_tokens`` adds up: what was delivered, or (delivered later than
    generated) at least that and the LLM's own count."""
    if subject.llm_generated is None:
        assert generation.generated_tokens == delivered
    else:
        assert generation.generated_tokens >= delivered
        assert generation.generated_tokens == subject.llm_generated(rid)


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
    _check_chunks(subject, sink.chunks)
    assert _tokens(sink.chunks) == subject.answer_tokens
    assert generation.finish_reason is subject.finish


async def test_abort_stops_output_at_once_and_reports_nothing_more(
    engine: Engine, subject: Subject
) -> None:
    generations: list[Generation] = []
    at_abort: list[int] = []

    def abort_on_the_third(count: int) -> None:
        if count == 3:
            generations[0].abort()
            at_abort.append(generations[0].generated_tokens)

    # Aborted from inside the sink, on its third chunk: not one more chunk may come.
    sink = RecordingSink(on_chunk=abort_on_the_third)
    generations.append(engine.submit(_request("a"), sink))
    await _run_to_end(engine, "barrier")
    assert len(sink.chunks) == 3
    assert sink.finishes == [], "an aborted request reports no finish"
    generation = generations[0]
    assert generation.finish_reason is FinishReason.ABORTED
    _check_generated(subject, generation, "a", _tokens(sink.chunks))
    assert generation.generated_tokens == at_abort[0], "generated after the abort"


async def test_abort_between_steps_and_after_the_finish(engine: Engine, subject: Subject) -> None:
    started = asyncio.Event()
    sink = RecordingSink(on_chunk=lambda count: started.set() if count == 2 else None)
    generation = engine.submit(_request("a"), sink)
    await asyncio.wait_for(started.wait(), 5)
    # Aborted from outside, between two steps: what was pushed by now is all there is.
    generation.abort()
    pushed, at_abort = len(sink.chunks), generation.generated_tokens
    await _run_to_end(engine, "barrier")
    assert len(sink.chunks) == pushed
    assert sink.finishes == []
    _check_generated(subject, generation, "a", _tokens(sink.chunks))
    assert generation.generated_tokens == at_abort, "generated after the abort"
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


async def test_a_length_limited_answer_ends_with_length(engine: Engine, subject: Subject) -> None:
    sink = QueueSink()
    generation = engine.submit(_request("a", max_tokens=5), sink)
    chunks = [chunk async for chunk in sink.chunks(timeout=30)]
    _check_chunks(subject, chunks)
    assert _tokens(chunks) == 5
    assert sink.finish_reason is FinishReason.LENGTH
    assert generation.generated_tokens == 5


async def test_token_counts(engine: Engine, subject: Subject) -> None:
    short = engine.submit(_request("short", "hi"), RecordingSink())
    long = engine.submit(_request("long", "a much longer prompt than the other " * 10), QueueSink())
    assert 0 < short.input_tokens < long.input_tokens
    generation, chunks = await _run_to_end(engine, "counted")
    answer = subject.answer_tokens
    assert generation.generated_tokens == _tokens(chunks) == answer
    assert engine.stats()["tokens_generated"] >= answer


async def test_a_failing_sink_ends_its_request_with_error(engine: Engine, subject: Subject) -> None:
    class Failing(RecordingSink):
        def on_output(self, chunk: OutputChunk) -> None:
            super().on_output(chunk)
            raise RuntimeError("client went away")

    sink = Failing()
    generation = engine.submit(_request("a"), sink)
    _, chunks = await _run_to_end(engine, "others go on")
    assert _tokens(chunks) == subject.answer_tokens
    assert len(sink.chunks) == 1
    assert sink.finishes == [FinishReason.ERROR]
    assert generation.finish_reason is FinishReason.ABORTED
