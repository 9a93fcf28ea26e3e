"""Synthetic audio output of the simulated engine: one syllable per token, speech-like."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

from protocol.conversation import Turn
from wsserver.audio.vad import EnergyVad, pcm16
from wsserver.engine.base import FinishReason, GenerationRequest, OutputChunk, QueueSink
from wsserver.engine.simulated import SimulatedEngine, SimulatedEngineConfig, SimulatedGeneration

DECODE_RATE = 500.0
TOKENS = 30


def _request(
    rid: str, text: str = "hello", *, rate: int = 16000, audio: bool = True, prefix: str = ""
) -> GenerationRequest:
    return GenerationRequest(
        rid, [Turn("user", text)], 1000, prefix, sample_rate=rate, audio_output=audio
    )


@pytest.fixture
async def engine() -> AsyncIterator[SimulatedEngine]:
    engine = SimulatedEngine(SimulatedEngineConfig(decode_rate=DECODE_RATE, answer_tokens=TOKENS))
    await engine.start()
    yield engine
    await engine.close()


async def _chunks(engine: SimulatedEngine, request: GenerationRequest) -> list[OutputChunk]:
    sink = QueueSink()
    engine.submit(request, sink)
    chunks = [chunk async for chunk in sink.chunks(timeout=2)]
    assert sink.finish_reason is FinishReason.STOP
    return chunks


@pytest.mark.parametrize("rate", [16000, 24000])
async def test_every_token_carries_one_decode_step_of_audio(
    engine: SimulatedEngine, rate: int
) -> None:
    chunks = await _chunks(engine, _request("a", rate=rate))
    assert len(chunks) == TOKENS
    samples = rate / DECODE_RATE
    for chunk in chunks:
        assert len(chunk.audio) == 2 * samples
        assert chunk.audio_ms == pytest.approx(1000 / DECODE_RATE)
        assert chunk.text and chunk.tokens == 1
    assert len({chunk.audio for chunk in chunks}) > 1, "syllables vary with the words"


async def test_same_prompt_same_words_and_sound(engine: SimulatedEngine) -> None:
    first = await _chunks(engine, _request("a", "same prompt"))
    second = await _chunks(engine, _request("b", "same prompt"))
    assert [(c.text, c.audio) for c in first] == [(c.text, c.audio) for c in second]
    other = await _chunks(engine, _request("c", "another prompt"))
    assert [c.audio for c in other] != [c.audio for c in first]


async def test_a_continuation_goes_on_with_the_same_words_and_sound(
    engine: SimulatedEngine,
) -> None:
    whole = await _chunks(engine, _request("a", "same prompt"))
    prefix = "".join(chunk.text for chunk in whole[:12])
    rest = await _chunks(engine, _request("b", "same prompt", prefix=prefix))
    assert prefix + "".join(chunk.text for chunk in rest) == "".join(c.text for c in whole)
    assert [chunk.audio for chunk in rest] == [chunk.audio for chunk in whole[12:]]


async def test_text_only_requests_are_silent(engine: SimulatedEngine) -> None:
    spoken = await _chunks(engine, _request("a", "same prompt"))
    silent = await _chunks(engine, _request("b", "same prompt", audio=False))
    assert [c.text for c in silent] == [c.text for c in spoken]
    assert all(c.audio == b"" and c.audio_ms == 0.0 for c in silent)


class _Collect:
    """A sink that keeps the chunks (the generation is stepped by hand)."""

    def __init__(self) -> None:
        self.chunks: list[OutputChunk] = []

    def on_output(self, chunk: OutputChunk) -> None:
        self.chunks.append(chunk)

    def on_finish(self, reason: FinishReason) -> None:
        pass


@pytest.mark.parametrize("rate", [16000, 24000])
def test_the_voice_is_heard_as_speech(rate: int) -> None:
    # The default decode rate (20 ms syllables); steps driven by hand, so three
    # seconds of speech take no wall time.
    engine = SimulatedEngine(SimulatedEngineConfig(answer_tokens=150))
    sink = _Collect()
    generation = SimulatedGeneration(engine, _request("a", rate=rate), sink)
    while generation.step():
        pass
    voice = np.concatenate([pcm16(chunk.audio) for chunk in sink.chunks])
    assert voice.size == 3 * rate
    stream = np.concatenate([np.zeros(rate // 2, np.int16), voice, np.zeros(rate, np.int16)])
    vad = EnergyVad(rate)
    step = rate // 50
    events = []
    for start in range(0, stream.size, step):
        events += vad.feed(stream[start : start + step])
    assert [e.kind for e in events] == ["speech_started", "speech_stopped"]
    started, stopped = events
    assert 500 <= started.audio_ms <= 600
    assert stopped.audio_ms >= 3400
