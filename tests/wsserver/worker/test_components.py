"""What the worker builds from its settings: each flag reaches its component."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

import wsserver.worker.settings as settings_module
from wsserver.engine.selector import ENGINE_NAMES
from wsserver.engine.simulated import SimulatedEngine, SimulatedEngineConfig
from wsserver.worker import components
from wsserver.worker.errors import WorkerConfigError
from wsserver.worker.settings import Settings


def test_engine_flags_reach_the_engine() -> None:
    settings = Settings(
        decode_rate=77.0,
        engine_slots=3,
        engine_queue=9,
        prefill_per_token_ms=2.5,
        answer_tokens=11,
    )
    engine = components.engine_of(settings)
    assert isinstance(engine, SimulatedEngine)
    assert engine.config == SimulatedEngineConfig(
        decode_rate=77.0, slots=3, max_queue=9, prefill_per_token_s=0.0025, answer_tokens=11
    )


def test_audio_and_quota_flags_reach_their_limits() -> None:
    settings = Settings(audio_max_turn_ms=5000, audio_max_ahead_ms=200, max_sessions_per_ip=7)
    audio = components.audio_limits(settings)
    assert (audio.max_turn_ms, audio.max_ahead_ms) == (5000, 200)
    assert components.quota_limits(settings).sessions_per_ip == 7


def test_settings_import_no_implementation() -> None:
    # Configuration names an engine, a store and a detector; it never imports them.
    tree = ast.parse(Path(settings_module.__file__).read_text())
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }
    implementations = {
        "wsserver.engine.simulated",
        "wsserver.audio.input",
        "wsserver.frontdoor.gate",
    }
    assert imported.isdisjoint(implementations), imported & implementations


def test_a_store_the_worker_cannot_build_is_a_config_error() -> None:
    with pytest.raises(WorkerConfigError, match="--store: unknown store 'mongodb://x'"):
        components.store_of(Settings(store="mongodb://x"))
    # Still a ValueError, as before the worker had its own tree.
    assert issubclass(WorkerConfigError, ValueError)


def test_the_engine_setting_offers_exactly_the_selectors_engines() -> None:
    assert get_args(Settings.model_fields["engine"].annotation) == ENGINE_NAMES


def test_speech_flags_wrap_the_engine_in_the_voice_pipeline() -> None:
    from wsserver.engine.pipeline.engine import PipelineEngine
    from wsserver.engine.pipeline.openai_tts import OpenAITextToSpeech

    settings = Settings(tts="openai", tts_url="http://127.0.0.1:9/v1", tts_voice="echo")
    engine = components.engine_of(settings)
    assert isinstance(engine, PipelineEngine) and isinstance(engine.llm, SimulatedEngine)
    assert engine.stt is None
    assert isinstance(engine.tts, OpenAITextToSpeech) and engine.tts.voice == "echo"
    with pytest.raises(WorkerConfigError, match="--stt openai needs --stt-url"):
        components.engine_of(Settings(stt="openai"))
