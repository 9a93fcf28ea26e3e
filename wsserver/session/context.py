"""What every session runtime of a worker shares: its collaborators and timings."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Protocol

from protocol.session import CoreSettings
from wsserver.audio.input import AudioInputLimits
from wsserver.engine.base import Engine, FinishReason, OutputChunk
from wsserver.metrics import NO_METRICS, WorkerMetrics
from wsserver.session.persistence import Persister, SessionJournal
from wsserver.store.base import SessionStore

_DEFAULT_AUDIO_LIMITS = AudioInputLimits()


class EndedRuntime(Protocol):
    """What the worker sees of a runtime whose session ended here."""

    @property
    def session_id(self) -> str:
        """The session's id."""
        ...

    @property
    def journal(self) -> SessionJournal:
        """The session's pending writes to the store."""
        ...

    def persist(self) -> None:
        """Schedule the session's pending writes."""
        ...


class RuntimeHost(Protocol):
    """What a runtime needs from its worker."""

    def session_ended(self, runtime: EndedRuntime, *, remove_from_store: bool) -> None:
        """Forget the runtime (and, for an ended session, its store record)."""
        ...


@dataclass(frozen=True, slots=True)
class RuntimeContext:
    """Collaborators and timings shared by every runtime of a worker."""

    engine: Engine
    store: SessionStore
    persister: Persister
    host: RuntimeHost
    worker_id: str
    grace_period: float
    resume_window: float
    vad: str = "energy"
    """Voice-activity detector for sessions with server VAD: ``energy`` or ``silero``."""
    audio_limits: AudioInputLimits = _DEFAULT_AUDIO_LIMITS
    tool_timeout: float = 60.0
    """Seconds an emitted tool call waits for its result."""
    tool_retries: int = 0
    """Times the engine writes a call again after invalid arguments (0: the response fails)."""
    metrics: WorkerMetrics = NO_METRICS


class EngineInputs(Protocol):
    """Where a generation's output goes: the runtime, which feeds it to the core."""

    def engine_output(self, response_id: str, chunk: OutputChunk) -> None:
        """A chunk of the response's running generation."""
        ...

    def engine_finished(self, response_id: str, reason: FinishReason) -> None:
        """The response's generation stopped by itself."""
        ...


class ResponseSink:
    """Turns one generation's output into inputs of the core."""

    __slots__ = ("_output", "_response_id", "_runtime")

    def __init__(self, runtime: EngineInputs, response_id: str) -> None:
        self._runtime = runtime
        self._response_id = response_id
        # Bound once: on_output runs once per token.
        self._output = runtime.engine_output

    def on_output(self, chunk: OutputChunk) -> None:
        self._output(self._response_id, chunk)

    def on_finish(self, reason: FinishReason) -> None:
        self._runtime.engine_finished(self._response_id, reason)


@functools.lru_cache(maxsize=16)
def core_settings(context: RuntimeContext) -> CoreSettings:
    """The core's policy, one object per worker (not one per session)."""
    return CoreSettings(
        grace_period=context.grace_period,
        resume_window=context.resume_window,
        tool_timeout=context.tool_timeout,
        tool_retries=context.tool_retries,
        log_shared=context.store.shared,
        max_turn_ms=context.audio_limits.max_turn_ms,
    )
