"""Building the pipeline from names: which parts, where, with which key."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.processes import cli_env
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


@pytest.mark.parametrize(
    ("flags", "missing"),
    [(["--stt", "whisper"], "soxr"), (["--tts", "piper"], "soxr"), (["--tts", "openai"], "httpx")],
)
def test_without_the_voice_extra_serve_says_what_to_install(flags: list[str], missing: str) -> None:
    # A plain install: the speech runtimes can't be imported; serve exits 2 with a message.
    program = (
        "import sys\n"
        f"sys.modules[{missing!r}] = None\n"
        "from wsserver.cli.main import main\n"
        f"sys.exit(main(['serve', '--port', '0', *{flags!r}, '--tts-url', 'http://127.0.0.1:9/v1']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=cli_env(), timeout=60
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert f"{missing} is not installed: pip install 'wsserver[voice]'" in result.stderr
