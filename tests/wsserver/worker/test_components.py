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


def test_upstream_flags_reach_the_openai_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    from wsserver.engine.openai.engine import OpenAICompatibleEngine

    monkeypatch.setenv("MY_UPSTREAM_KEY", "sk-test-123")
    settings = Settings(
        engine="openai",
        upstream_url="http://127.0.0.1:9/v1",
        upstream_model="m",
        upstream_api_key_env="MY_UPSTREAM_KEY",
        upstream_connect_timeout=1.5,
        upstream_first_token_timeout=7,
        upstream_chunk_timeout=3,
        upstream_retries=4,
        upstream_max_concurrency=5,
        upstream_queue=6,
        upstream_temperature=0.2,
        upstream_continue_final_message=True,
    )
    engine = components.engine_of(settings)
    assert isinstance(engine, OpenAICompatibleEngine)
    config = engine.config
    assert (config.base_url, config.model, config.api_key) == (
        "http://127.0.0.1:9/v1",
        "m",
        "sk-test-123",
    )
    assert (config.connect_timeout, config.first_token_timeout, config.chunk_timeout) == (1.5, 7, 3)
    assert (config.retries, config.max_concurrency, config.max_queue) == (4, 5, 6)
    assert config.temperature == 0.2
    assert config.continue_final_message is True
    # The key is read from the environment, never kept in (printable) settings or reprs.
    assert "sk-test-123" not in repr(settings) + repr(config)


def test_local_flags_reach_the_embedded_server(tmp_path: Path) -> None:
    from wsserver.engine.local import LocalEngine

    model = tmp_path / "x.gguf"
    model.write_bytes(b"GGUF")
    settings = Settings(
        engine="local",
        model_path=str(model),
        local_threads=2,
        local_context=1024,
        local_parallel=3,
        local_chat_template="/models/t.jinja",
    )
    engine = components.engine_of(settings)
    assert isinstance(engine, LocalEngine)
    server = engine.server.config
    assert (server.model_path, server.threads, server.context, server.parallel) == (
        str(model),
        2,
        1024,
        3,
    )
    assert server.chat_template_path == "/models/t.jinja"


def test_a_local_engine_without_its_model_is_a_config_error(tmp_path: Path) -> None:
    settings = Settings(engine="local", model_path=str(tmp_path / "missing.gguf"))
    with pytest.raises(WorkerConfigError, match="--engine: model file not found"):
        components.engine_of(settings)


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


def test_local_tool_aid_flags_reach_the_engine(tmp_path: Path) -> None:
    """--local-tool-aid: the shipped tools template by default, the example in each body."""
    from wsserver.engine.local import LocalEngine
    from wsserver.engine.local_tools import TOOL_CALL_PREFILL, tools_template_path

    example = Path(__file__).parents[1] / "engine" / "fixtures" / "set_light_example.json"
    settings = Settings(
        engine="local", local_tool_aid=True, local_tool_example=str(example), local_port=18099
    )
    engine = components.engine_of(settings)
    assert isinstance(engine, LocalEngine)
    assert engine.server.config.chat_template_path == tools_template_path()
    assert engine.server.config.port == 18099
    rewrite = engine._upstream_config.rewrite_body
    assert rewrite is not None
    body = rewrite(
        {"messages": [{"role": "user", "content": "hi"}], "tools": [{"function": {"name": "x"}}]}
    )
    assert body["messages"][-1] == {"role": "assistant", "content": TOOL_CALL_PREFILL}
    plain = components.engine_of(Settings(engine="local", local_chat_template="tools"))
    assert isinstance(plain, LocalEngine)
    assert plain._upstream_config.rewrite_body is None, "no aid unless asked for"
    bad = tmp_path / "bad.json"
    bad.write_text("[1]")
    with pytest.raises(WorkerConfigError, match=r"--local-tool-example: .*needs a role"):
        components.engine_of(
            Settings(engine="local", local_tool_aid=True, local_tool_example=str(bad))
        )


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
