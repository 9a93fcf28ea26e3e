"""Hostile speech servers found by the issue-12 attack (each test reproduces one finding).

A real loopback HTTP server answers as a broken or hostile transcription or speech
server would; each case must end with a clear pipeline error within the timeouts, and
nothing that cannot be encoded may leave the client as text.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator

import pytest

from wsserver.engine.pipeline.errors import PipelineError
from wsserver.engine.pipeline.openai_stt import OpenAISpeechToText
from wsserver.engine.pipeline.openai_tts import OpenAITextToSpeech
from wsserver.engine.pipeline.speech_http import SpeechEndpoint

TRICKLE_SECONDS = 0.05
"""Between two bytes of a trickling answer: well inside the read timeout, forever."""

CONNECT_SECONDS = 2.0
"""Loopback connects at once, but a loaded machine can hold the loop past half a second:
these tests are about reads, so connecting gets room (the call's deadline grows with it)."""


class _Trickle:
    """Answers every request with ``head`` at once, then ``body`` one byte at a time."""

    def __init__(self, head: bytes, body: bytes, pause: float) -> None:
        self.head, self.body, self.pause = head, body, pause
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.decode("latin-1").split("\r\n"):
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            await reader.readexactly(length)
            writer.write(self.head)
            for byte in self.body:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(self.pause)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.transport.abort()

    async def url(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"


@pytest.fixture
async def trickle() -> AsyncIterator[list[_Trickle]]:
    servers: list[_Trickle] = []
    yield servers
    for server in servers:
        if server.server is not None:
            server.server.close()


def _json_head(length: int) -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


async def _transcribe(url: str) -> str:
    stt = OpenAISpeechToText(
        SpeechEndpoint(url, "whisper-1", connect_timeout=CONNECT_SECONDS, read_timeout=0.5)
    )
    try:
        (transcript,) = [t async for t in stt.transcribe(b"\x00\x00" * 1600, 16000)]
    finally:
        await stt.close()
    return transcript.text


async def test_a_transcript_with_a_lone_surrogate_never_leaves_as_text(
    trickle: list[_Trickle],
) -> None:
    # Found: '{"text": "hello \\ud800"}' is valid JSON; the surrogate reached the LLM's
    # request, which could not be encoded: a traceback in the worker log
    # ("upstream request ... broke", UnicodeEncodeError) and the turn failed engine_error.
    body = b'{"text": "hello \\ud800 world"}'
    server = _Trickle(_json_head(len(body)) + body, b"", 0)
    trickle.append(server)
    try:
        text = await _transcribe(await server.url())
    except PipelineError:
        return  # refusing it is as good
    text.encode("utf-8")  # raises on a surrogate


async def test_a_transcription_that_trickles_fails_within_a_bound(
    trickle: list[_Trickle],
) -> None:
    # Found: the read timeout is per read, so one byte every 50 ms (or every second)
    # keeps a transcription, and the response waiting on it, open for as long as the
    # server likes (the docs: "a stall past read_timeout (30 s)" fails).
    body = b'{"text": "' + b"a" * 2000 + b'"}'
    server = _Trickle(_json_head(len(body)), body, TRICKLE_SECONDS)
    trickle.append(server)
    url = await server.url()
    with pytest.raises(PipelineError):
        await asyncio.wait_for(_transcribe(url), timeout=20)


async def test_a_synthesis_that_trickles_fails_within_a_bound(
    trickle: list[_Trickle],
) -> None:
    # Found, as for transcription: two bytes of audio at a time, each well within the
    # read timeout, hold a clause's synthesis (and the answer behind it) open forever.
    head = b"HTTP/1.1 200 OK\r\nContent-Type: audio/pcm\r\nContent-Length: 100000\r\n\r\n"
    server = _Trickle(head, b"\x00" * 100_000, TRICKLE_SECONDS)
    trickle.append(server)
    tts = OpenAITextToSpeech(
        SpeechEndpoint(
            await server.url(), "kokoro", connect_timeout=CONNECT_SECONDS, read_timeout=0.5
        ),
        voice="af",
        response_format="pcm",
    )

    async def speak() -> None:
        async for _ in tts.synthesize("Hi there.", 16000):
            pass

    try:
        with pytest.raises(PipelineError):
            await asyncio.wait_for(speak(), timeout=20)
    finally:
        await tts.close()


async def test_a_speech_error_message_with_a_lone_surrogate_is_valid_text(
    trickle: list[_Trickle],
) -> None:
    # The server's own message becomes the generation's error (logged, kept, reported):
    # it must encode like any other text.
    body = b'{"error": {"message": "voice \\ud800 missing\\u0007"}}'
    head = (
        "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    server = _Trickle(head + body, b"", 0)
    trickle.append(server)
    tts = OpenAITextToSpeech(SpeechEndpoint(await server.url(), "kokoro", read_timeout=0.5))
    try:
        with pytest.raises(PipelineError) as caught:
            async for _ in tts.synthesize("Hi there.", 16000):
                pass
    finally:
        await tts.close()
    message = str(caught.value)
    assert message == "speech failed: http 404: voice \ufffd missing", message
    message.encode("utf-8")


async def test_a_transcription_whose_headers_trickle_fails_within_a_bound(
    trickle: list[_Trickle],
) -> None:
    # Headers are reads too: a status line and headers one byte every 50 ms (up to the
    # HTTP parser's 16 KiB) must not outlast the whole call's deadline.
    body = b'{"text": "hi"}'
    server = _Trickle(b"", _json_head(len(body)) + b"X-Pad: " + b"a" * 4000 + body, TRICKLE_SECONDS)
    trickle.append(server)
    url = await server.url()
    with pytest.raises(PipelineError, match="took longer than"):
        await asyncio.wait_for(_transcribe(url), timeout=20)


@pytest.mark.parametrize("part", ["headers", "error body"])
async def test_a_synthesis_whose_headers_or_error_trickle_fails_within_a_bound(
    trickle: list[_Trickle], part: str
) -> None:
    # Before the audio: the status line and headers, or an error status's message,
    # trickled, are held to the same deadline as the audio.
    message = b'{"error": {"message": "' + b"m" * 4000 + b'"}}'
    head = (
        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(message)}\r\n\r\n"
    ).encode()
    if part == "headers":
        server = _Trickle(b"", b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 4000, TRICKLE_SECONDS)
    else:
        server = _Trickle(head, message, TRICKLE_SECONDS)
    trickle.append(server)
    tts = OpenAITextToSpeech(
        SpeechEndpoint(
            await server.url(), "kokoro", connect_timeout=CONNECT_SECONDS, read_timeout=0.5
        )
    )

    async def speak() -> None:
        async for _ in tts.synthesize("Hi.", 16000):
            pass

    try:
        with pytest.raises(PipelineError, match="took longer than"):
            await asyncio.wait_for(speak(), timeout=20)
    finally:
        await tts.close()


async def test_a_compressed_answer_is_refused_before_it_is_inflated(
    trickle: list[_Trickle],
) -> None:
    # Found: the clients accepted gzip and inflated each block before the size bound saw
    # it: 2 GiB of spaces sent compressed grew the worker by 132 MiB before it was refused.
    body = gzip.compress(b'{"text": "' + b" " * 50_000_000 + b'"}')
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    server = _Trickle(head + body, b"", 0)
    trickle.append(server)
    with pytest.raises(PipelineError, match="gzip"):
        await _transcribe(await server.url())
