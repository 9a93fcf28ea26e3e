"""The OpenAI-compatible transcription client against a loopback server (real Whisper)."""

from __future__ import annotations

import pytest

from tests.wsserver.engine.pipeline.speech_server import SpeechServer
from tests.wsserver.speech_models import spoken, word_errors
from wsserver.engine.pipeline.errors import SpeechToTextError
from wsserver.engine.pipeline.openai_stt import OpenAISpeechToText
from wsserver.engine.pipeline.speech_http import SpeechEndpoint

SENTENCE = "Please set a timer for ten minutes."


async def _transcribe(url: str, audio: bytes, **endpoint: object) -> str:
    stt = OpenAISpeechToText(SpeechEndpoint(url, "whisper-1", **endpoint))  # type: ignore[arg-type]
    try:
        (transcript,) = [t async for t in stt.transcribe(audio, 16000)]
    finally:
        await stt.close()
    assert transcript.final
    return transcript.text


async def test_a_spoken_sentence_is_sent_as_a_wav_form_and_heard(
    speech_server: SpeechServer,
) -> None:
    text = await _transcribe(speech_server.url(), spoken(SENTENCE), api_key="sk-test")
    assert word_errors(SENTENCE, text) <= 2, text
    request = speech_server.requests[-1]
    assert request["content_type"].startswith("multipart/form-data; boundary=")
    assert request["form"] == {"model": "whisper-1", "response_format": "json", "language": "en"}
    filename, kind, _ = request["file"]
    assert (filename, kind, request["wav_rate"]) == ("turn.wav", "audio/wav", 16000)
    assert request["authorization"] == "Bearer sk-test"


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("error", "transcription failed: http 500: model not loaded"),
        ("html", "transcription answered text/html, not application/json"),
        ("badjson", "transcription answered invalid json"),
        ("badutf8", "transcription answered invalid json"),
        ("notext", 'transcription answer has no "text" string'),
        ("huge", "speech server sent more than 1048576 bytes"),
        ("stall", "transcription timed out (ReadTimeout)"),
        ("reset", "transcription request failed"),
    ],
)
async def test_a_hostile_server_is_a_clear_failure(
    speech_server: SpeechServer, mode: str, message: str
) -> None:
    with pytest.raises(SpeechToTextError) as failure:
        await _transcribe(speech_server.url(mode), b"\x00\x00" * 1600, read_timeout=0.5)
    assert str(failure.value).startswith(message)


async def test_no_server_is_a_clear_failure(unused_tcp_port: int) -> None:
    with pytest.raises(SpeechToTextError, match="transcription request failed"):
        await _transcribe(f"http://127.0.0.1:{unused_tcp_port}/v1", b"\x00\x00" * 100)
