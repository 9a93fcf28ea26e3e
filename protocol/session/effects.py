"""What the session core asks for: frozen effects, executed in order by the runtime.

The core never does I/O; each effect names one piece of it. Outcomes that
matter to the session (the engine accepted a request, the store applied a
result) come back as inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol.codes import CloseCode
from protocol.generation import GenerationRequest
from protocol.messages import AudioSettings
from protocol.session.inputs import TimerKind


@dataclass(frozen=True, slots=True)
class StartGeneration:
    """Submit ``request`` to the engine for the response (answer: ``GenerationStarted``
    or ``GenerationRefused``)."""

    response_id: str
    request: GenerationRequest


@dataclass(frozen=True, slots=True)
class AbortGeneration:
    """Abort the running generation now (no more tokens)."""


@dataclass(frozen=True, slots=True)
class ArmTimer:
    """Start (or restart) the timer of ``kind``; it fires as ``TimerFired(kind)``."""

    kind: TimerKind
    delay: float


@dataclass(frozen=True, slots=True)
class CancelTimer:
    """Stop the timer of ``kind`` if it is armed."""

    kind: TimerKind


@dataclass(frozen=True, slots=True)
class RecordToolCall:
    """Write an emitted call to the store's ledger (before its result can be applied)."""

    call_id: str
    response_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ApplyToolResult:
    """Apply a result through the ledger, once (answer: ``ToolResultStored``)."""

    call_id: str
    output: Any
    error: str | None
    request_id: str | None


@dataclass(frozen=True, slots=True)
class CloseToolCalls:
    """Close unanswered calls as ``timed_out`` in the ledger (answer: ``ToolCallsClosed``)."""

    response_id: str
    call_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CommitInputAudio:
    """Make the buffered input audio a turn (answer: ``TurnCommitted``, or ``Refused``)."""

    request_id: str | None


@dataclass(frozen=True, slots=True)
class ClearInputAudio:
    """Drop the uncommitted input audio."""


@dataclass(frozen=True, slots=True)
class ConfigureVoice:
    """The session's audio settings changed (``session.update``): follow them.

    A text session's input audio starts; a voice session's turn detector is made
    again with the new settings (the uncommitted audio is kept: same sample rate).
    """

    settings: AudioSettings


@dataclass(frozen=True, slots=True)
class Wake:
    """Tell the transport's writer there are events to send."""


@dataclass(frozen=True, slots=True)
class Persist:
    """Mark the session for the next batched store write."""


@dataclass(frozen=True, slots=True)
class RecordUsage:
    """Write the usage of ended responses to the ledger (those never sent too, if asked)."""

    include_unsent: bool = False


@dataclass(frozen=True, slots=True)
class Close:
    """Close the attached transport with ``code``."""

    code: CloseCode
    text: str


@dataclass(frozen=True, slots=True)
class EndSession:
    """The session is over here: end it (``SessionEnding``) and forget it."""

    remove_from_store: bool


WAKE = Wake()
"""The one ``Wake`` (frozen and field-less: shared, not made once per token)."""
PERSIST = Persist()
"""The one ``Persist``."""

Effect = (
    StartGeneration
    | AbortGeneration
    | ArmTimer
    | CancelTimer
    | RecordToolCall
    | ApplyToolResult
    | CloseToolCalls
    | CommitInputAudio
    | ClearInputAudio
    | ConfigureVoice
    | Wake
    | Persist
    | RecordUsage
    | Close
    | EndSession
)
"""Every effect the core returns."""
