"""What the session core is told: frozen inputs, each the record of one thing that happened.

The runtime builds one for every client message, engine chunk or finish,
timer firing, store answer, voice event and transport departure, and passes
it to :meth:`protocol.session.core.SessionCore.handle` with ``now``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from protocol.errors import ProtocolViolation
from protocol.generation import FinishReason, OutputChunk
from protocol.messages import (
    Ack,
    InputAudioClear,
    InputAudioCommit,
    InputText,
    OutputAudioPlayed,
    ResponseCancel,
    ResponseContinue,
    ResponseCreate,
    ResponseInterrupt,
    SessionUpdate,
    ToolResult,
)

SessionMessage = (
    InputText
    | ResponseCreate
    | ResponseContinue
    | ResponseInterrupt
    | ResponseCancel
    | OutputAudioPlayed
    | InputAudioCommit
    | InputAudioClear
    | SessionUpdate
    | Ack
    | ToolResult
)
"""The client messages the core takes (every one but ping and session.start/resume)."""

# -- from the client --------------------------------------------------------
# A validated client message of the session (``protocol.messages``) is an input
# as it is; the connection-level ones (ping, session.start/resume) never get here.


@dataclass(frozen=True, slots=True)
class Refused:
    """Something the client sent was refused before the core saw it (answered in-band)."""

    violation: ProtocolViolation


# -- from the engine --------------------------------------------------------


class TokenCounts(Protocol):
    """The running generation's own token counts (an engine's ``Generation`` has them)."""

    @property
    def input_tokens(self) -> int:
        """Tokens of the prompt, as the engine counted them."""
        ...

    @property
    def generated_tokens(self) -> int:
        """Every token the engine produced for the request, delivered or not."""
        ...


@dataclass(frozen=True, slots=True)
class EngineCounts:
    """Fixed token counts (a :class:`TokenCounts` for tests and replays)."""

    input_tokens: int
    generated_tokens: int


@dataclass(frozen=True, slots=True)
class GenerationStarted:
    """The engine accepted a ``StartGeneration``; its prompt's token count."""

    response_id: str
    input_tokens: int


@dataclass(frozen=True, slots=True)
class GenerationRefused:
    """The engine did not accept a ``StartGeneration`` (full, or it raised)."""

    response_id: str
    overloaded: bool


class EngineOutput(NamedTuple):
    """A chunk of a running generation (text, audio, or a piece of a tool call).

    A named tuple, not a frozen dataclass like the other inputs: one is made per
    token, and a tuple is built several times faster (equally immutable).
    """

    response_id: str
    chunk: OutputChunk


@dataclass(frozen=True, slots=True)
class EngineFinished:
    """The engine stopped by itself."""

    response_id: str
    reason: FinishReason


@dataclass(frozen=True, slots=True)
class InternalFailure:
    """Handling an input of this response raised: it must still end, once, ``failed``."""

    response_id: str


# -- timers -----------------------------------------------------------------


class TimerKind(enum.StrEnum):
    """The timers of a session (at most one of each is armed)."""

    GRACE = "grace"
    """A detached session's running response keeps generating until this fires."""
    EXPIRY = "expiry"
    """A detached session is forgotten here when nobody resumed it."""
    TOOL_WAIT = "tool_wait"
    """A response awaiting tool results gives up on them here."""


@dataclass(frozen=True, slots=True)
class TimerFired:
    """A timer the core armed went off."""

    kind: TimerKind


# -- store answers ------------------------------------------------------------


class ResultOutcome(enum.StrEnum):
    """What the store's ledger did with a ``tool.result``."""

    APPLIED = "applied"
    DUPLICATE = "duplicate"
    UNKNOWN = "unknown"
    CLOSED = "closed"
    UNAVAILABLE = "unavailable"
    UNREADABLE = "unreadable"
    """The session's stored ledger does not read back (damaged): asking again is no use."""
    FAILED = "failed"
    """The store call raised something unexpected (logged): the result was not applied."""


@dataclass(frozen=True, slots=True)
class ToolResultStored:
    """The outcome of an ``ApplyToolResult``."""

    call_id: str
    outcome: ResultOutcome
    output: Any
    error: str | None
    request_id: str | None
    call_status: str | None = None
    """For ``closed``: the status the ledger has for the call (``timed_out``...)."""


@dataclass(frozen=True, slots=True)
class ToolCallsClosed:
    """The outcome of a ``CloseToolCalls``: the calls the ledger closed (or could not reach)."""

    response_id: str
    call_ids: tuple[str, ...]


# -- voice (from the turn detector) ---------------------------------------------


@dataclass(frozen=True, slots=True)
class SpeechStarted:
    """The detector heard the user start speaking at ``audio_ms`` into the stream."""

    audio_ms: int


@dataclass(frozen=True, slots=True)
class SpeechStopped:
    """The user stopped speaking at ``audio_ms`` (after the configured silence)."""

    audio_ms: int
    speech_ms: int
    """How long the speech lasted."""


@dataclass(frozen=True, slots=True)
class TurnCommitted:
    """Buffered audio became a user turn."""

    audio: bytes
    start_ms: int
    end_ms: int
    complete: bool = True
    """False for a part of a turn cut at the length bound while the user still talks."""

    @property
    def duration_ms(self) -> int:
        """Length of the turn's audio."""
        return self.end_ms - self.start_ms


@dataclass(frozen=True, slots=True)
class SpeechDiscarded:
    """Speech too short to be a turn (false interruption); its audio was dropped."""

    start_ms: int
    end_ms: int


InputEvent = SpeechStarted | SpeechStopped | TurnCommitted | SpeechDiscarded
"""A voice event of the turn detector (``wsserver.audio.input.AudioInput``)."""


# -- the transport and the worker ------------------------------------------------


class Departure(enum.Enum):
    """How a transport left its session."""

    LOST = "lost"
    """Gone without a goodbye (or closed with a resume code): the running response
    keeps generating for the grace period, the session stays resumable."""
    CLOSED_RESUMABLE = "closed_resumable"
    """The client closed with a code other than 1000: the running response is aborted
    at once, the session stays resumable until its TTL."""
    ENDED = "ended"
    """The client closed with 1000, or the server closed with a terminal code: the
    running response is aborted and the session is over."""


@dataclass(frozen=True, slots=True)
class TransportAttached:
    """A transport (re)attached: timers of a detached session stop."""


@dataclass(frozen=True, slots=True)
class TransportDeparted:
    """The attached transport went away."""

    departure: Departure
    reason: str = "client_closed"


@dataclass(frozen=True, slots=True)
class StopRunning:
    """End the running response ``incomplete`` with ``reason`` (a drain ran out of time)."""

    reason: str


@dataclass(frozen=True, slots=True)
class ResponseLost:
    """A response whose worker is gone ends ``failed``, with the usage the store had."""

    response_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class SessionEnding:
    """The session ends here (expired, or ended by its client): stop, number, settle."""


@dataclass(frozen=True, slots=True)
class SessionMoved:
    """Another worker took the session over: stop at once, say nothing more."""


Input = (
    SessionMessage
    | Refused
    | GenerationStarted
    | GenerationRefused
    | EngineOutput
    | EngineFinished
    | InternalFailure
    | TimerFired
    | ToolResultStored
    | ToolCallsClosed
    | SpeechStarted
    | SpeechStopped
    | TurnCommitted
    | SpeechDiscarded
    | TransportAttached
    | TransportDeparted
    | StopRunning
    | ResponseLost
    | SessionEnding
    | SessionMoved
)
"""Every input the core takes."""
