"""Text-to-speech from an OpenAI-compatible server: ``POST /v1/audio/speech``, streamed.

Kokoro-FastAPI and OpenAI speak it. ``response_format`` ``pcm`` is raw PCM16
mono at 24 kHz (OpenAI's fixed rate); ``wav`` carries its rate in the header.
The body is read as it streams and resampled to the session's rate chunk by
chunk; aborting closes the connection, which stops the server's synthesis.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Literal

import httpx

from wsserver.engine.pipeline.errors import TextToSpeechError
from wsserver.engine.pipeline.pcm import Resampler, WavHeaderError, parse_wav_header
from wsserver.engine.pipeline.speech_http import (
    SpeechEndpoint,
    blocks_until,
    content_type,
    failure_message,
)

PCM_RATE = 24000
"""The rate of ``response_format: pcm``."""
MAX_SECONDS_PER_CHAR = 0.5
"""A clause's audio is bounded by its length (plus a second): more is a broken server."""
_PCM_TYPES = frozenset({"audio/pcm", "audio/l16", "application/octet-stream", "audio/raw"})
_WAV_TYPES = frozenset({"audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"})


class OpenAITextToSpeech:
    """A :class:`~wsserver.engine.pipeline.tts.TextToSpeech` over an HTTP server."""

    def __init__(
        self,
        endpoint: SpeechEndpoint,
        *,
        voice: str = "alloy",
        response_format: Literal["pcm", "wav"] = "pcm",
    ) -> None:
        self.endpoint = endpoint
        self.voice = voice
        self.response_format = response_format
        self._client: httpx.AsyncClient | None = None

    async def synthesize(self, text: str, sample_rate: int) -> AsyncGenerator[bytes, None]:
        """PCM16 at ``sample_rate`` as the server streams it."""
        if not text.strip():
            return
        if self._client is None:
            self._client = self.endpoint.client()
        body = {
            "model": self.endpoint.model,
            "input": text,
            "voice": self.voice,
            "response_format": self.response_format,
        }
        seconds = self.endpoint.call_seconds(_max_seconds(text))
        deadline = asyncio.get_running_loop().time() + seconds
        request = self._client.build_request("POST", "/audio/speech", json=body)
        try:
            async with asyncio.timeout_at(deadline):
                response = await self._client.send(request, stream=True)
            try:
                if response.status_code // 100 != 2:
                    async with asyncio.timeout_at(deadline):
                        message = await failure_message(response, "speech")
                    raise TextToSpeechError(message)
                self._check_type(response)
                decoded = self._decode(blocks_until(response, deadline), text, sample_rate)
                async with contextlib.aclosing(decoded):
                    async for audio in decoded:
                        yield audio
            finally:
                await response.aclose()
        except TimeoutError as exc:  # an abort cancels: that passes through as it is
            raise TextToSpeechError(f"speech took longer than {seconds:.1f} s") from exc
        except httpx.TimeoutException as exc:
            raise TextToSpeechError(f"speech timed out ({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:
            raise TextToSpeechError(f"speech request failed: {exc}") from exc

    def _check_type(self, response: httpx.Response) -> None:
        kind = content_type(response)
        allowed = _PCM_TYPES if self.response_format == "pcm" else _WAV_TYPES
        # A server that omits the type is given the benefit of the doubt; a JSON or
        # HTML page where audio belongs is not audio.
        if kind and kind not in allowed and not kind.startswith("audio/"):
            raise TextToSpeechError(f"speech answered {kind}, not {self.response_format} audio")

    async def _decode(
        self, blocks: AsyncGenerator[bytes, None], text: str, sample_rate: int
    ) -> AsyncGenerator[bytes, None]:
        limit_bytes = int(_max_seconds(text) * PCM_RATE * 2)
        resampler: Resampler | None = None
        if self.response_format == "pcm":
            resampler = Resampler(PCM_RATE, sample_rate)
        head = b""
        received = 0
        async with contextlib.aclosing(blocks):
            async for block in blocks:
                received += len(block)
                if received > limit_bytes + 4096:
                    raise TextToSpeechError(
                        f"speech server sent more than {limit_bytes} bytes"
                        f" for {len(text)} characters"
                    )
                if resampler is None:
                    head += block
                    try:
                        found = parse_wav_header(head)
                    except WavHeaderError as exc:
                        raise TextToSpeechError(f"speech answered a bad wav: {exc}") from exc
                    if found is None:
                        if len(head) > 65_536:
                            raise TextToSpeechError("speech answered a wav header that never ends")
                        continue
                    rate, offset = found
                    resampler = Resampler(rate, sample_rate)
                    block, head = head[offset:], b""
                out = resampler.feed(block)
                if out:
                    yield out
        if resampler is None:
            raise TextToSpeechError("speech answered a wav without audio")
        tail = resampler.feed(b"", last=True)
        if tail:
            yield tail

    async def close(self) -> None:
        """Close the connection pool."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


def _max_seconds(text: str) -> float:
    """The most audio a clause may have: a second plus ``MAX_SECONDS_PER_CHAR`` per character."""
    return 1.0 + MAX_SECONDS_PER_CHAR * len(text)
