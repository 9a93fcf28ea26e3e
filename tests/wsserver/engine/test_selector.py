"""The engine selector: a name and options become an engine."""

from __future__ import annotations

import pytest

from wsserver.engine.base import EngineError
from wsserver.engine.selector import ENGINE_NAMES, EngineOptions, UnknownEngine, open_engine
from wsserver.engine.simulated import SimulatedEngine, SimulatedEngineConfig


def test_simulated_is_built_with_its_options() -> None:
    options = EngineOptions(
        decode_rate=77.0, slots=3, max_queue=9, prefill_per_token_ms=2.5, answer_tokens=11
    )
    engine = open_engine("simulated", options)
    assert isinstance(engine, SimulatedEngine)
    assert engine.config == SimulatedEngineConfig(
        decode_rate=77.0, slots=3, max_queue=9, prefill_per_token_s=0.0025, answer_tokens=11
    )


def test_defaults_are_the_simulated_engines() -> None:
    engine = open_engine("simulated")
    assert isinstance(engine, SimulatedEngine)
    assert engine.config == SimulatedEngineConfig()


def test_an_unknown_name_is_refused_with_the_known_ones() -> None:
    assert ENGINE_NAMES == ("simulated", "openai", "local")
    with pytest.raises(UnknownEngine, match=r"unknown engine 'gpu'.*simulated") as refused:
        open_engine("gpu")
    assert isinstance(refused.value, EngineError)


def test_openai_and_local_are_built_with_their_options() -> None:
    from wsserver.engine.llama_server import LlamaServerConfig
    from wsserver.engine.local import LocalEngine
    from wsserver.engine.openai import OpenAICompatibleEngine, OpenAIEngineConfig

    upstream = OpenAIEngineConfig(base_url="http://127.0.0.1:9/v1", model="m", retries=5)
    local = LlamaServerConfig(threads=3, context=1024)
    options = EngineOptions(upstream=upstream, local=local)
    openai = open_engine("openai", options)
    assert isinstance(openai, OpenAICompatibleEngine)
    assert openai.config == upstream
    built = open_engine("local", options)
    assert isinstance(built, LocalEngine)
    assert built.server.config == local
