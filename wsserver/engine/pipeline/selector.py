"""Build the pipeline a worker's settings name (``--stt``, ``--tts``) around its LLM engine.

Plain names and strings in; the speech implementations are imported only when
named, so a worker without the ``voice`` extra never loads them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from wsserver.engine.base import Engine
from wsserver.engine.pipeline.errors import PipelineError, SpeechModelUnavailable
from wsserver.engine.pipeline.stt import SpeechToText
from wsserver.engine.pipeline.tts import TextToSpeech

STT_NAMES = ("none", "whisper", "openai")
TTS_NAMES = ("none", "piper", "openai")


class UnknownSpeechPart(PipelineError, ValueError):
    """A name that is not one of :data:`STT_NAMES` or :data:`TTS_NAMES`, or a missing URL."""


@dataclass(frozen=True, slots=True)
class SpeechOptions:
    """Which speech parts wrap the LLM, and where the HTTP ones are."""

    stt: str = "none"
    tts: str = "none"
    stt_url: str = ""
    stt_model: str = "whisper-1"
    stt_language: str = "en"
    stt_api_key_env: str = "WSSERVER_STT_API_KEY"
    tts_url: str = ""
    tts_model: str = "tts-1"
    tts_voice: str = "alloy"
    tts_format: Literal["pcm", "wav"] = "pcm"
    tts_api_key_env: str = "WSSERVER_TTS_API_KEY"

    @property
    def wanted(self) -> bool:
        """Whether any speech part is named (else the LLM serves as it is)."""
        return self.stt != "none" or self.tts != "none"


def open_stt(options: SpeechOptions) -> SpeechToText | None:
    """The transcriber ``options.stt`` names (``None`` for ``none``)."""
    if options.stt == "none":
        return None
    if options.stt == "whisper":
        from wsserver.engine.pipeline.whisper import WhisperSpeechToText

        return WhisperSpeechToText(language=options.stt_language or None)
    if options.stt == "openai":
        from wsserver.engine.pipeline.openai_stt import OpenAISpeechToText
        from wsserver.engine.pipeline.speech_http import SpeechEndpoint

        if not options.stt_url:
            raise UnknownSpeechPart("--stt openai needs --stt-url (http://HOST:PORT/v1)")
        endpoint = SpeechEndpoint(options.stt_url, options.stt_model, _key(options.stt_api_key_env))
        return OpenAISpeechToText(endpoint, language=options.stt_language or None)
    raise UnknownSpeechPart(f"unknown stt {options.stt!r}: use one of {', '.join(STT_NAMES)}")


def open_tts(options: SpeechOptions) -> TextToSpeech | None:
    """The synthesizer ``options.tts`` names (``None`` for ``none``)."""
    if options.tts == "none":
        return None
    if options.tts == "piper":
        from wsserver.engine.pipeline.piper_voice import PiperTextToSpeech

        return PiperTextToSpeech()
    if options.tts == "openai":
        from wsserver.engine.pipeline.openai_tts import OpenAITextToSpeech
        from wsserver.engine.pipeline.speech_http import SpeechEndpoint

        if not options.tts_url:
            raise UnknownSpeechPart("--tts openai needs --tts-url (http://HOST:PORT/v1)")
        endpoint = SpeechEndpoint(options.tts_url, options.tts_model, _key(options.tts_api_key_env))
        return OpenAITextToSpeech(
            endpoint, voice=options.tts_voice, response_format=options.tts_format
        )
    raise UnknownSpeechPart(f"unknown tts {options.tts!r}: use one of {', '.join(TTS_NAMES)}")


def open_pipeline(llm: Engine, options: SpeechOptions) -> Engine:
    """``llm`` wrapped in the pipeline when a speech part is named; else ``llm`` itself."""
    if not options.wanted:
        return llm
    try:
        from wsserver.engine.pipeline.engine import PipelineEngine

        return PipelineEngine(llm, open_stt(options), open_tts(options))
    except ModuleNotFoundError as exc:
        # The speech runtimes are an extra: a plain install names what to add, not a traceback.
        raise SpeechModelUnavailable(
            f"{exc.name or 'a speech runtime'} is not installed: pip install 'wsserver[voice]'"
        ) from exc


def _key(variable: str) -> str:
    return os.environ.get(variable, "") if variable else ""
