"""Speech-to-text from an OpenAI-compatible server: ``POST /v1/audio/transcriptions``.

faster-whisper servers, vLLM and OpenAI speak it: a multipart form with the
audio file (WAV here) and the model name in, ``{"text": "..."}`` out. One final
transcript per call (no partial results). Aborting closes the connection.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator

import httpx

from protocol.generation import Transcript
from wsserver.engine.pipeline.errors import SpeechToTextError
from wsserver.engine.pipeline.pcm import to_wav
from wsserver.engine.pipeline.speech_http import (
    SpeechEndpoint,
    content_type,
    failure_message,
    read_bounded,
)
from wsserver.engine.pipeline.text import valid_text

MAX_RESPONSE_BYTES = 1 << 20
"""A transcript of one turn is far smaller; a bigger body is a broken server."""


class OpenAISpeechToText:
    """A :class:`~wsserver.engine.pipeline.stt.SpeechToText` over an HTTP server."""

    def __init__(self, endpoint: SpeechEndpoint, *, language: str | None = "en") -> None:
        self.endpoint = endpoint
        self._language = language
        self._client: httpx.AsyncClient | None = None

    async def transcribe(self, audio: bytes, sample_rate: int) -> AsyncGenerator[Transcript, None]:
        """One final transcript, or ``SpeechToTextError`` past the whole call's deadline."""
        seconds = self.endpoint.call_seconds(len(audio) / 2 / max(sample_rate, 1))
        try:
            async with asyncio.timeout(seconds):
                text = await self._request(audio, sample_rate)
        except TimeoutError as exc:  # an abort cancels: that passes through as it is
            raise SpeechToTextError(f"transcription took longer than {seconds:.1f} s") from exc
        yield Transcript(text, final=True)

    async def _request(self, audio: bytes, sample_rate: int) -> str:
        if self._client is None:
            self._client = self.endpoint.client()
        data = {"model": self.endpoint.model, "response_format": "json"}
        if self._language:
            data["language"] = self._language
        files = {"file": ("turn.wav", to_wav(audio, sample_rate), "audio/wav")}
        try:
            async with self._client.stream(
                "POST", "/audio/transcriptions", data=data, files=files
            ) as response:
                if response.status_code // 100 != 2:
                    raise SpeechToTextError(await failure_message(response, "transcription"))
                kind = content_type(response)
                if kind != "application/json":
                    raise SpeechToTextError(
                        f"transcription answered {kind or 'no content type'}, not application/json"
                    )
                body = await read_bounded(response, MAX_RESPONSE_BYTES, SpeechToTextError)
        except httpx.TimeoutException as exc:
            raise SpeechToTextError(f"transcription timed out ({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:
            raise SpeechToTextError(f"transcription request failed: {exc}") from exc
        try:
            parsed = json.loads(body)
        except ValueError as exc:
            raise SpeechToTextError("transcription answered invalid json") from exc
        text = parsed.get("text") if isinstance(parsed, dict) else None
        if not isinstance(text, str):
            raise SpeechToTextError('transcription answer has no "text" string')
        return valid_text(text).strip()

    async def close(self) -> None:
        """Close the connection pool."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
