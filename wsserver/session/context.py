"""What every session runtime of a worker shares: its collaborators and timings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from wsserver.audio.input import AudioInputLimits
from wsserver.engine.base import Engine, FinishReason, OutputChunk
from wsserver.session.persistence import Persister
from wsserver.store.base import SessionStore

if TYPE_CHECKING:
    from wsserver.session.runtime import SessionRuntime

_DEFAULT_AUDIO_LIMITS = AudioInputLimits()


class RuntimeHost(Protocol):
    """What a runtime needs from its worker."""

    def session_ended(self, runtime: SessionRuntime, *, remove_from_store: bool) -> None:
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


class ResponseSink:
    """Turns one generation's output into inputs of the core."""

    __slots__ = ("_response_id", "_runtime")

    def __init__(self, runtime: SessionRuntime, response_id: str) -> None:
        self._runtime = runtime
        self._response_id = response_id

    def on_output(self, chunk: OutputChunk) -> None:
        self._runtime.engine_output(self._response_id, chunk)

    def on_finish(self, reason: FinishReason) -> None:
        self._runtime.engine_finished(self._response_id, reason)
