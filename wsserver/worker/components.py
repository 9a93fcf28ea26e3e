"""What a worker is built from: the implementations its settings name.

:class:`~wsserver.worker.settings.Settings` is plain data (names and numbers); the
engine, the store, the registry, the voice-activity detector and the front door are
chosen and built here, through each package's selector, when the worker starts.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from wsserver.audio.input import AudioInputLimits
from wsserver.engine.base import Engine
from wsserver.engine.llama_server import LlamaServerConfig
from wsserver.engine.local_tools import (
    TOOLS_TEMPLATE,
    LocalToolsError,
    ToolCallAid,
    chat_template_path,
    load_tool_example,
)
from wsserver.engine.openai.config import OpenAIEngineConfig
from wsserver.engine.selector import EngineOptions, EngineUnavailable, UnknownEngine, open_engine
from wsserver.frontdoor.addresses import parse_networks
from wsserver.frontdoor.gate import FrontDoor
from wsserver.frontdoor.origin import OriginPolicy
from wsserver.frontdoor.quotas import QuotaLimits, Quotas
from wsserver.registry.base import UnknownRegistry, WorkerRegistry
from wsserver.registry.selector import open_registry
from wsserver.store.base import SessionStore, UnknownStore
from wsserver.store.selector import open_store
from wsserver.worker.errors import WorkerConfigError
from wsserver.worker.settings import Settings


def engine_of(settings: Settings) -> Engine:
    """The engine ``--engine`` names, with its speed and capacity flags."""
    upstream = upstream_of(settings)
    template, aid = local_tools_of(settings)
    if aid is not None:
        upstream = dataclasses.replace(upstream, rewrite_body=aid.apply)
    options = EngineOptions(
        decode_rate=settings.decode_rate,
        slots=settings.engine_slots,
        max_queue=settings.engine_queue,
        prefill_per_token_ms=settings.prefill_per_token_ms,
        answer_tokens=settings.answer_tokens,
        upstream=upstream,
        local=LlamaServerConfig(
            model_path=settings.model_path,
            threads=settings.local_threads,
            context=settings.local_context,
            parallel=settings.local_parallel,
            chat_template_path=template,
            port=settings.local_port,
            # Read here, never stored in the settings (they are printed and logged).
            api_key=os.environ.get(settings.local_api_key_env) or None,
        ),
    )
    try:
        engine = open_engine(settings.engine, options)
    except (UnknownEngine, EngineUnavailable) as exc:
        raise WorkerConfigError(f"--engine: {exc}") from exc
    return voice_pipeline_of(settings, engine)


def voice_pipeline_of(settings: Settings, llm: Engine) -> Engine:
    """``llm`` inside the voice pipeline when ``--stt`` or ``--tts`` names a part."""
    from wsserver.engine.pipeline.errors import PipelineError
    from wsserver.engine.pipeline.selector import SpeechOptions, open_pipeline

    options = SpeechOptions(
        stt=settings.stt,
        tts=settings.tts,
        stt_url=settings.stt_url,
        stt_model=settings.stt_model,
        stt_language=settings.stt_language,
        stt_api_key_env=settings.stt_api_key_env,
        tts_url=settings.tts_url,
        tts_model=settings.tts_model,
        tts_voice=settings.tts_voice,
        tts_format=settings.tts_format,
        tts_api_key_env=settings.tts_api_key_env,
    )
    try:
        return open_pipeline(llm, options)
    except PipelineError as exc:
        raise WorkerConfigError(f"--stt/--tts: {exc}") from exc


def local_tools_of(settings: Settings) -> tuple[str | None, ToolCallAid | None]:
    """The local engine's chat template file and its small-model tool aid, if asked for."""
    template = chat_template_path(
        settings.local_chat_template or (TOOLS_TEMPLATE if settings.local_tool_aid else "")
    )
    if settings.engine != "local" or not settings.local_tool_aid:
        return template, None
    try:
        example = settings.local_tool_example
        return template, ToolCallAid(load_tool_example(example) if example else ())
    except LocalToolsError as exc:
        raise WorkerConfigError(f"--local-tool-example: {exc}") from exc


def upstream_of(settings: Settings) -> OpenAIEngineConfig:
    """The upstream of the openai engine; its key from the variable the settings name."""
    return OpenAIEngineConfig(
        base_url=settings.upstream_url,
        model=settings.upstream_model,
        # Read here, never stored in the settings: they are printed and logged.
        api_key=os.environ.get(settings.upstream_api_key_env) or None,
        connect_timeout=settings.upstream_connect_timeout,
        first_token_timeout=settings.upstream_first_token_timeout,
        chunk_timeout=settings.upstream_chunk_timeout,
        retries=settings.upstream_retries,
        max_concurrency=settings.upstream_max_concurrency,
        max_queue=settings.upstream_queue,
        temperature=settings.upstream_temperature,
        continue_final_message=settings.upstream_continue_final_message,
    )


def store_of(settings: Settings) -> SessionStore:
    """The session store ``--store`` names."""
    try:
        return open_store(
            settings.store,
            settings.store_limits(),
            timeout=settings.store_timeout,
            max_connections=settings.store_max_connections or None,
        )
    except UnknownStore as exc:
        raise WorkerConfigError(f"--store: {exc}") from exc


def registry_of(settings: Settings, sessions: SessionStore) -> WorkerRegistry:
    """The registry routers read, in the same place as the sessions (``--store``)."""
    try:
        return open_registry(
            settings.store,
            # Lapses three intervals after the last entry: a killed worker disappears
            # from routers' lists without anyone cleaning up.
            ttl=settings.registry_interval * 3,
            timeout=settings.store_timeout,
            sessions=sessions,
            max_connections=settings.store_max_connections or None,
        )
    except UnknownRegistry as exc:
        raise WorkerConfigError(f"--store: {exc}") from exc


def check_detector(settings: Settings) -> None:
    """Load the neural detector now if ``--vad silero``: fail at startup, not at the
    first voice session (raises ``VadUnavailable``)."""
    if settings.vad == "silero":
        from wsserver.audio.silero import load_model

        load_model()


def audio_limits(settings: Settings) -> AudioInputLimits:
    """Bounds on a session's input audio."""
    return AudioInputLimits(
        max_turn_ms=settings.audio_max_turn_ms, max_ahead_ms=settings.audio_max_ahead_ms
    )


def quota_limits(settings: Settings) -> QuotaLimits:
    """Quotas and rates per client address and principal."""
    return QuotaLimits(
        sessions_per_principal=settings.max_sessions_per_principal,
        sessions_per_ip=settings.max_sessions_per_ip,
        connections_per_principal=settings.max_connections_per_principal,
        connections_per_ip=settings.max_connections_per_ip,
        handshakes_per_second_per_ip=settings.handshakes_per_second_per_ip,
        handshake_burst_per_ip=settings.handshake_burst_per_ip,
        messages_per_second_per_principal=settings.messages_per_second_per_principal,
        message_burst_per_principal=settings.message_burst_per_principal,
        failed_resumes_per_minute=settings.failed_resumes_per_minute,
        failed_resume_burst=settings.failed_resume_burst,
        table_size=settings.quota_table_size,
        ipv6_prefix=settings.quota_ipv6_prefix,
        exempt=parse_networks(settings.quota_exempt),
    )


def front_door(settings: Settings, live: Callable[[str], bool]) -> FrontDoor:
    """The Origin allowlist and quotas; ``live`` tells whether a session is still here."""
    return FrontDoor(
        OriginPolicy.from_text(settings.allowed_origins),
        Quotas(quota_limits(settings), live),
        parse_networks(settings.trusted_proxies),
    )
