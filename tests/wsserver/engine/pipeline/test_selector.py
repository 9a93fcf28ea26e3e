"""Building the pipeline from names: which parts, where, with which key."""

from __future__ import annotations

import pytest

from wsserver.engine.pipeline.engine import PipelineEngine
from wsserver.engine.pipeline.openai_stt import OpenAISpeechToText
from wsserver.engine.pipeline.openai_tts import OpenAITextToSpeech
from wsserver.engine.pipeline.selector import SpeechOptions, UnknownSpeechPart, open_pipeline
from wsserver.engine.simulated import SimulatedEngine


def test_no_speech_part_leaves_the_llm_as_it_is() -> None:
    llm = SimulatedEngine()
    assert open_pipeline(llm, SpeechOptions()) is llm


def test_the_http_parts_get_their_urls_models_voice_and_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_STT_KEY", "sk-stt")
    monkeypatch.delenv("WSSERVER_TTS_API_KEY", raising=False)
    options = SpeechOptions(
        stt="openai",
        stt_url="http://127.0.0.1:9/v1",
        stt_model="large-v3",
        stt_api_key_env="MY_STT_KEY",
        tts="openai",
        tts_url="http://127.0.0.1:10/v1",
        tts_model="kokoro",
        tts_voice="af_bella",
        tts_format="wav",
    )
    engine = open_pipeline(SimulatedEngine(), options)
    assert isinstance(engine, PipelineEngine)
    assert isinstance(engine.stt, OpenAISpeechToText) and isinstance(engine.tts, OpenAITextToSpeech)
    assert (engine.stt.endpoint.model, engine.stt.endpoint.api_key) == ("large-v3", "sk-stt")
    assert engine.tts.endpoint.base_url == "http://127.0.0.1:10/v1"
    assert (engine.tts.voice, engine.tts.response_format, engine.tts.endpoint.api_key) == (
        "af_bella",
        "wav",
        "",
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (SpeechOptions(stt="openai"), "--stt openai needs --stt-url"),
        (SpeechOptions(tts="openai"), "--tts openai needs --tts-url"),
        (SpeechOptions(stt="vosk"), "unknown stt 'vosk'"),
        (SpeechOptions(tts="espeak"), "unknown tts 'espeak'"),
    ],
)
def test_bad_names_and_missing_urls_are_refused(options: SpeechOptions, message: str) -> None:
    with pytest.raises(UnknownSpeechPart, match=message):
        open_pipeline(SimulatedEngine(), options)


def test_the_settings_offer_exactly_the_selectors_names() -> None:
    from typing import get_args

    from wsserver.engine.pipeline.selector import STT_NAMES, TTS_NAMES
    from wsserver.worker.settings import Settings

    assert get_args(Settings.model_fields["stt"].annotation) == STT_NAMES
    assert get_args(Settings.model_fields["tts"].annotation) == TTS_NAMES
