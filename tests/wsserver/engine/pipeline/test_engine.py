"""The pipeline engine over the simulated LLM, with the real whisper and piper models."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

from protocol.conversation import Turn
from protocol.generation import Transcript
from tests.wsserver.engine.pipeline.speech_server import SpeechServer
from tests.wsserver.speech_models import piper_voice, rms, spoken, whisper_model, word_errors
from tests.wsserver.tool_specs import WEATHER_TOOL
from tests.wsserver.wire import wait_until
from wsserver.engine.base import EngineOverloaded, FinishReason, GenerationRequest, OutputChunk
from wsserver.engine.pipeline.engine import PipelineConfig, PipelineEngine, PipelineGeneration
from wsserver.engine.pipeline.openai_stt import OpenAISpeechToText
from wsserver.engine.pipeline.openai_tts import OpenAITextToSpeech
from wsserver.engine.pipeline.piper_voice import PiperTextToSpeech
from wsserver.engine.pipeline.speech_http import SpeechEndpoint
from wsserver.engine.pipeline.whisper import WhisperSpeechToText
from wsserver.engine.simulated import SimulatedEngine, SimulatedEngineConfig

RATE = 16000
QUESTION = "Turn on the kitchen light, please."


@dataclass
class Recorder:
    """Every call the engine makes, in order."""

    calls: list[OutputChunk | FinishReason] = field(default_factory=list)
    on_chunk: Callable[[OutputChunk], None] | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)

    def on_output(self, chunk: OutputChunk) -> None:
        assert not self.finished.is_set(), "output after the finish"
        self.calls.append(chunk)
        if self.on_chunk is not None:
            self.on_chunk(chunk)

    def on_finish(self, reason: FinishReason) -> None:
        assert not self.finished.is_set(), "a second finish"
        self.calls.append(reason)
        self.finished.set()

    @property
    def chunks(self) -> list[OutputChunk]:
        return [c for c in self.calls if isinstance(c, OutputChunk)]

    @property
    def transcripts(self) -> list[Transcript]:
        return [c.transcript for c in self.chunks if c.transcript is not None]

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.chunks)


def _engine(decode_rate: float = 400, answer_tokens: int = 30, **parts: object) -> PipelineEngine:
    llm = SimulatedEngine(
        SimulatedEngineConfig(decode_rate=decode_rate, answer_tokens=answer_tokens)
    )
    stt = parts.get("stt", WhisperSpeechToText(whisper_model()))
    tts = parts.get("tts", PiperTextToSpeech(piper_voice()))
    return PipelineEngine(llm, stt, tts)  # type: ignore[arg-type]


@pytest.fixture
async def pipeline() -> AsyncIterator[PipelineEngine]:
    engine = _engine()
    await engine.start()
    yield engine
    await engine.close()


def _voice_request(
    rid: str = "r", audio: bytes | None = None, *, speak: bool = True, **fields: object
) -> GenerationRequest:
    audio = spoken(QUESTION) if audio is None else audio
    prompt = [Turn("system", "be brief"), Turn("user", f"[audio {len(audio) // 32} ms]")]
    return GenerationRequest(
        rid,
        prompt,
        1000,
        input_audio=audio,
        sample_rate=RATE,
        audio_output=speak,
        **fields,  # type: ignore[arg-type]
    )


def _spoken_answer(rid: str = "r") -> GenerationRequest:
    """A typed question with a spoken answer (no transcription: the LLM starts at once)."""
    return GenerationRequest(
        rid, [Turn("user", "tell me")], 1000, sample_rate=RATE, audio_output=True
    )


def _llm(engine: PipelineEngine) -> SimulatedEngine:
    assert isinstance(engine.llm, SimulatedEngine)
    return engine.llm


async def test_transcript_first_then_clauses_carrying_their_audio(pipeline: PipelineEngine) -> None:
    sink = Recorder()
    generation = pipeline.submit(_voice_request(), sink)
    await asyncio.wait_for(sink.finished.wait(), 30)
    assert sink.calls[-1] is FinishReason.STOP
    # What was heard comes first: partial transcripts, then exactly one final one.
    first_other = next(i for i, c in enumerate(sink.chunks) if c.transcript is None)
    assert all(c.transcript is not None for c in sink.chunks[:first_other])
    assert [t.final for t in sink.transcripts][-1] is True
    assert sum(t.final for t in sink.transcripts) == 1
    assert word_errors(QUESTION, sink.transcripts[-1].text) <= 2
    # The LLM got the words instead of the placeholder (and no audio to speak itself).
    llm = _llm(pipeline)
    assert "r" not in llm.heard_by_request
    spoken_chunks = sink.chunks[first_other:]
    assert all(c.transcript is None for c in spoken_chunks)
    # Every chunk with text carries audio: text never leaves after its audio.
    assert all(c.audio for c in spoken_chunks if c.text.strip())
    audio = b"".join(c.audio for c in spoken_chunks)
    assert rms(audio) > 500
    assert sum(c.audio_ms for c in spoken_chunks) == pytest.approx(len(audio) / 32, abs=1)
    # 30 words of 3-6 letters: a few seconds of speech.
    assert 3_000 <= len(audio) / 32 <= 20_000
    # The text is the LLM's, exactly, and usage adds up to the LLM's tokens.
    assert len(sink.text.split()) == 30
    assert sum(c.tokens for c in sink.chunks) == generation.generated_tokens == 30
    assert generation.input_tokens > 0
    assert generation.finish_reason is FinishReason.STOP
    stats = pipeline.stats()
    assert (stats["transcriptions"], stats["llm_aborted"], stats["pipeline_running"]) == (1, 0, 0)
    assert stats["syntheses"] >= 1


async def test_the_transcript_replaces_the_placeholder_in_the_llm_prompt() -> None:
    engine = _engine()
    await engine.start()
    sink = Recorder()
    # The simulated LLM calls get_weather when the user's words ask for the weather: it
    # can only do so if it got the words, not "[audio N ms]".
    request = _voice_request(audio=spoken("What is the weather in London?"), tools=(WEATHER_TOOL,))
    engine.submit(request, sink)
    await asyncio.wait_for(sink.finished.wait(), 30)
    await engine.close()
    calls = [c.tool_call for c in sink.chunks if c.tool_call is not None]
    assert calls, f"no tool call for {sink.transcripts[-1].text!r}"
    assert '"London"' in "".join(c.arguments for c in calls)
    # Tool calls pass straight through, with no audio, and the round ends for them.
    assert sink.calls[-1] is FinishReason.TOOL_CALLS


async def test_a_text_only_request_goes_to_the_llm_as_it_is(pipeline: PipelineEngine) -> None:
    sink = Recorder()
    request = GenerationRequest("t", [Turn("user", "hello")], 1000)
    generation = pipeline.submit(request, sink)
    assert not isinstance(generation, PipelineGeneration)
    await asyncio.wait_for(sink.finished.wait(), 10)
    assert len(sink.chunks) == 30 and not any(c.audio for c in sink.chunks)


async def test_listening_without_speaking_passes_the_llm_output_through(
    pipeline: PipelineEngine,
) -> None:
    sink = Recorder()
    pipeline.submit(_voice_request(speak=False), sink)
    await asyncio.wait_for(sink.finished.wait(), 30)
    assert sink.transcripts[-1].final
    assert len([c for c in sink.chunks if c.transcript is None]) == 30


async def test_silence_is_heard_as_nothing_and_answered_with_nothing(
    pipeline: PipelineEngine,
) -> None:
    sink = Recorder()
    pipeline.submit(_voice_request(audio=b"\x00\x00" * 1600), sink)
    await asyncio.wait_for(sink.finished.wait(), 30)
    assert sink.transcripts == [Transcript("", final=True)]
    assert sink.calls[-1] is FinishReason.STOP
    assert "r" not in _llm(pipeline).generated_by_request


async def _barrier(engine: PipelineEngine) -> None:
    """A text request run to its end: the aborted one had every chance to misbehave."""
    sink = Recorder()
    engine.submit(GenerationRequest("barrier", [Turn("user", "x")], 5), sink)
    await asyncio.wait_for(sink.finished.wait(), 10)
    await asyncio.sleep(0.3)


async def test_abort_during_transcription_reports_nothing_and_never_asks_the_llm(
    pipeline: PipelineEngine,
) -> None:
    sink = Recorder()
    generation = pipeline.submit(_voice_request(), sink)
    await asyncio.sleep(0.05)  # the model runs in its thread now
    generation.abort()
    await _barrier(pipeline)
    assert sink.calls == []
    assert generation.finish_reason is FinishReason.ABORTED
    assert "r" not in _llm(pipeline).generated_by_request
    stats = pipeline.stats()
    assert (stats["transcriptions_aborted"], stats["llm_aborted"]) == (1, 0)
    # Whisper's thread was told to stop; its result was thrown away.
    assert isinstance(pipeline.stt, WhisperSpeechToText) and pipeline.stt.abandoned == 1


async def test_abort_while_the_llm_streams_stops_it_at_once() -> None:
    engine = _engine(decode_rate=20, answer_tokens=400)
    await engine.start()
    generations: list[PipelineGeneration] = []

    def on_chunk(chunk: OutputChunk) -> None:
        if chunk.transcript is not None and chunk.transcript.final:
            # The LLM starts now; let it stream a few tokens, then abort.
            asyncio.get_running_loop().call_later(0.3, generations[0].abort)

    sink = Recorder(on_chunk=on_chunk)
    generation = engine.submit(_voice_request(), sink)
    assert isinstance(generation, PipelineGeneration)
    generations.append(generation)
    llm = _llm(engine)
    await wait_until(lambda: generation.finish_reason is FinishReason.ABORTED, 30)
    reported = len(sink.calls)
    tokens = llm.generated_by_request["r"]
    await _barrier(engine)
    assert len(sink.calls) == reported, "output after the abort"
    assert FinishReason.ABORTED not in sink.calls and not sink.finished.is_set()
    assert llm.generated_by_request["r"] == tokens < 400
    assert engine.stats()["llm_aborted"] == 1
    await engine.close()


async def test_abort_during_synthesis_reports_nothing_more() -> None:
    # The simulated LLM writes no punctuation: its first clause is cut at the bound.
    engine = _engine(decode_rate=1000, answer_tokens=200)
    await engine.start()
    sink = Recorder()
    generation = engine.submit(_spoken_answer(), sink)
    assert isinstance(generation, PipelineGeneration)
    # Checked and aborted in one step of the loop: the synthesis is still running.
    await wait_until(lambda: generation.stage == "tts", 30)
    generation.abort()
    reported = len(sink.calls)
    await _barrier(engine)
    assert len(sink.calls) == reported
    assert not any(c.audio for c in sink.chunks), "audio of the aborted synthesis"
    stats = engine.stats()
    assert stats["syntheses_aborted"] == 1
    assert stats["pipeline_running"] == 0
    # Piper's thread was told to stop; what it was making was thrown away.
    assert isinstance(engine.tts, PiperTextToSpeech) and engine.tts.abandoned == 1
    assert engine.llm.stats()["running"] == 0
    await engine.close()


async def test_a_failing_transcriber_fails_the_generation(unused_tcp_port: int) -> None:
    closed = SpeechEndpoint(f"http://127.0.0.1:{unused_tcp_port}/v1", "whisper-1")
    engine = _engine(stt=OpenAISpeechToText(closed))
    await engine.start()
    sink = Recorder()
    generation = engine.submit(_voice_request(), sink)
    await asyncio.wait_for(sink.finished.wait(), 30)
    assert sink.calls == [FinishReason.ERROR]
    assert isinstance(generation, PipelineGeneration)
    assert generation.error is not None and "transcription request failed" in generation.error
    assert engine.stats()["pipeline_failures"] == 1
    assert "r" not in _llm(engine).generated_by_request
    await engine.close()


async def test_a_failing_synthesizer_fails_the_generation_and_stops_the_llm(
    unused_tcp_port: int,
) -> None:
    closed = SpeechEndpoint(f"http://127.0.0.1:{unused_tcp_port}/v1", "tts-1")
    engine = _engine(decode_rate=50, answer_tokens=400, tts=OpenAITextToSpeech(closed))
    await engine.start()
    sink = Recorder()
    generation = engine.submit(_spoken_answer(), sink)
    await asyncio.wait_for(sink.finished.wait(), 30)
    assert sink.calls[-1] is FinishReason.ERROR
    assert not any(c.text for c in sink.chunks), "text whose audio never came"
    assert isinstance(generation, PipelineGeneration)
    assert generation.error is not None and "speech request failed" in generation.error
    llm = _llm(engine)
    assert llm.stats()["running"] == 0
    assert llm.generated_by_request["r"] < 400
    assert engine.stats()["llm_aborted"] == 1
    await engine.close()


async def test_a_sink_that_aborts_from_inside_its_output_gets_nothing_more(
    pipeline: PipelineEngine,
) -> None:
    generations: list[PipelineGeneration] = []

    def on_chunk(chunk: OutputChunk) -> None:
        if chunk.audio:
            generations[0].abort()

    sink = Recorder(on_chunk=on_chunk)
    generation = pipeline.submit(_spoken_answer(), sink)
    assert isinstance(generation, PipelineGeneration)
    generations.append(generation)
    await wait_until(lambda: generation.finish_reason is FinishReason.ABORTED, 30)
    await _barrier(pipeline)
    assert sum(1 for c in sink.chunks if c.audio) == 1
    assert not sink.finished.is_set()


async def test_abort_while_a_transcription_server_is_thinking_closes_the_request(
    speech_server: SpeechServer,
) -> None:
    stalled = SpeechEndpoint(speech_server.url("stall"), "whisper-1", read_timeout=30)
    engine = _engine(stt=OpenAISpeechToText(stalled))
    await engine.start()
    sink = Recorder()
    before = len(speech_server.requests)
    generation = engine.submit(_voice_request(), sink)
    await wait_until(lambda: len(speech_server.requests) > before, 10)
    generation.abort()
    await _barrier(engine)
    assert sink.calls == []
    assert engine.stats()["transcriptions_aborted"] == 1
    # The connection went with the abort: closing the client does not wait on it.
    await asyncio.wait_for(engine.close(), 5)


async def test_past_its_bound_the_pipeline_refuses_like_a_full_engine() -> None:
    llm = SimulatedEngine(SimulatedEngineConfig(decode_rate=400, answer_tokens=5))
    engine = PipelineEngine(
        llm, WhisperSpeechToText(whisper_model()), None, PipelineConfig(max_running=1)
    )
    await engine.start()
    first = engine.submit(_voice_request("a"), Recorder())
    with pytest.raises(EngineOverloaded, match="voice pipeline is full"):
        engine.submit(_voice_request("b"), Recorder())
    # Text requests do not wait for the speech models: they go on.
    engine.submit(GenerationRequest("text", [Turn("user", "hi")], 5), Recorder())
    first.abort()
    engine.submit(_voice_request("c"), Recorder())
    await engine.close()


async def test_llm_text_that_cannot_be_encoded_is_made_valid_before_it_is_spoken() -> None:
    # The LLM's text comes from another engine: an upstream that sent "\ud800" or a NUL
    # (the simulated LLM quotes a tool result that has them) failed the whole answer in
    # the voice ("piper failed: ... surrogates not allowed", "embedded null character").
    engine = _engine(decode_rate=400)
    await engine.start()
    prompt = [
        Turn("user", "what did the tools say"),
        Turn("tool", "sunny \ud800 and\x00 warm", tool_call_id="a"),
        Turn("tool", "dry", tool_call_id="b"),  # last: the simulated LLM hashes it
    ]
    request = GenerationRequest("r", prompt, 1000, sample_rate=RATE, audio_output=True)
    sink = Recorder()
    engine.submit(request, sink)
    await asyncio.wait_for(sink.finished.wait(), 30)
    await engine.close()
    assert sink.calls[-1] is FinishReason.STOP, sink.calls[-1]
    assert "sunny \ufffd and warm" in sink.text, sink.text
    sink.text.encode("utf-8")
    assert rms(b"".join(c.audio for c in sink.chunks)) > 500
