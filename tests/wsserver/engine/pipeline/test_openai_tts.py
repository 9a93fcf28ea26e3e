"""The OpenAI-compatible speech client against a loopback server (real piper)."""

from __future__ import annotations

import asyncio

import pytest

from tests.wsserver.engine.pipeline.speech_server import SpeechServer
from tests.wsserver.speech_models import rms
from wsserver.engine.pipeline.errors import TextToSpeechError
from wsserver.engine.pipeline.openai_tts import OpenAITextToSpeech
from wsserver.engine.pipeline.speech_http import SpeechEndpoint

SENTENCE = "Your timer is set. It will ring in ten minutes."


async def _speak(url: str, fmt: str = "pcm", rate: int = 16000, **endpoint: object) -> list[bytes]:
    tts = OpenAITextToSpeech(
        SpeechEndpoint(url, "tts-1", **endpoint),  # type: ignore[arg-type]
        voice="af_bella",
        response_format=fmt,  # type: ignore[arg-type]
    )
    try:
        return [chunk async for chunk in tts.synthesize(SENTENCE, rate)]
    finally:
        await tts.close()


@pytest.mark.parametrize("fmt", ["pcm", "wav"])
async def test_streamed_speech_arrives_resampled_to_the_session_rate(
    speech_server: SpeechServer, fmt: str
) -> None:
    chunks = await _speak(speech_server.url(), fmt)
    # Streamed: more than one piece came (a sentence at a time, split by the network).
    assert len(chunks) >= 2
    audio = b"".join(chunks)
    assert len(audio) % 2 == 0
    seconds = len(audio) / 2 / 16000
    assert 2.0 <= seconds <= 6.0
    assert rms(audio) > 500
    request = speech_server.requests[-1]
    assert request["json"] == {
        "model": "tts-1",
        "input": SENTENCE,
        "voice": "af_bella",
        "response_format": fmt,
    }
    assert request["content_type"] == "application/json"


async def test_pcm_is_taken_as_24_khz(speech_server: SpeechServer) -> None:
    at_24k = b"".join(await _speak(speech_server.url(), "pcm", 24000))
    at_8k = b"".join(await _speak(speech_server.url(), "pcm", 8000))
    # The server speaks steadily (the same audio each time): only the rates differ.
    assert len(at_24k) / 2 / 24000 == pytest.approx(len(at_8k) / 2 / 8000, abs=0.005)


@pytest.mark.parametrize(
    ("mode", "fmt", "message"),
    [
        ("error", "pcm", "speech failed: http 500: model not loaded"),
        ("html", "pcm", "speech answered text/html, not pcm audio"),
        ("huge", "pcm", "speech server sent more than"),
        ("huge", "wav", "speech answered a bad wav: not a wav stream"),
        ("badwav", "wav", "speech answered a bad wav: wav is not pcm16 mono"),
        ("stall", "pcm", "speech timed out (ReadTimeout)"),
        ("reset", "pcm", "speech request failed"),
    ],
)
async def test_a_hostile_server_is_a_clear_failure(
    speech_server: SpeechServer, mode: str, fmt: str, message: str
) -> None:
    with pytest.raises(TextToSpeechError) as failure:
        await _speak(speech_server.url(mode), fmt, read_timeout=0.5)
    assert str(failure.value).startswith(message), str(failure.value)


async def test_closing_the_stream_midway_stops_reading(speech_server: SpeechServer) -> None:
    tts = OpenAITextToSpeech(SpeechEndpoint(speech_server.url("huge"), "tts-1"))
    speech = tts.synthesize(SENTENCE * 20, 16000)
    first = await anext(speech)
    assert first
    # An abort: the reader goes away; the connection closes, nothing hangs.
    await asyncio.wait_for(speech.aclose(), 5)
    await asyncio.wait_for(tts.close(), 5)
