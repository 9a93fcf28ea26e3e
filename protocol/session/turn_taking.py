"""Voice turn taking: barge-in, answering a committed turn, false-interruption resume.

The turn detector (``wsserver.audio.input.AudioInput``) reports speech and
turns; the decisions are here. Speech while an answer plays interrupts it
(the path of ``response.interrupt``), a committed turn starts an answer (or,
while one runs, is answered when it ends), and a "turn" too short to be one
(a cough) resumes the answer it cut off, as a continuation from what the
user heard.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ProtocolViolation
from protocol.events import (
    INPUT_CLEARED,
    INPUT_COMMITTED,
    INPUT_DISCARDED,
    SPEECH_STARTED,
    SPEECH_STOPPED,
)
from protocol.messages import AudioSettings
from protocol.session import responding
from protocol.session.effects import (
    PERSIST,
    WAKE,
    ClearInputAudio,
    CommitInputAudio,
)
from protocol.session.inputs import (
    InputEvent,
    SpeechDiscarded,
    SpeechStarted,
    SpeechStopped,
    TurnCommitted,
)
from protocol.session.responses import ResponseState, ResponseStatus

if TYPE_CHECKING:
    from protocol.session.core import SessionCore


def audio_turn_text(duration_ms: int) -> str:
    """The conversation's placeholder for a spoken turn (engines get the audio itself)."""
    return f"[audio {duration_ms} ms]"


class TurnTaking:
    """The voice state of one session started with audio."""

    __slots__ = (
        "answer_when_idle",
        "barge_ins",
        "barged",
        "max_audio_bytes",
        "pending_audio",
        "settings",
        "speaking",
    )

    def __init__(self, settings: AudioSettings, max_turn_ms: int) -> None:
        self.settings = settings
        self.max_audio_bytes = int(max_turn_ms * settings.sample_rate * 2 / 1000)
        """The audio kept for the next engine request is bounded like one turn."""
        self.pending_audio = bytearray()
        """Audio of the turns committed since the last answer, for the engine."""
        self.answer_when_idle = False
        """A turn was committed while an answer ran: answer it when that one ends."""
        self.barged: ResponseState | None = None
        """The response the current speech interrupted (false-interruption recovery)."""
        self.barge_ins = 0
        self.speaking = False
        """The detector hears the user now (between speech started and stopped)."""

    def keep_audio(self, audio: bytes) -> None:
        """Keep a turn's audio for the next engine request (bounded like one turn)."""
        pending = self.pending_audio
        pending += audio
        if len(pending) > self.max_audio_bytes:
            del pending[: len(pending) - self.max_audio_bytes]

    def take_audio(self) -> bytes:
        """The committed turns' audio, handed to one engine request."""
        audio = bytes(self.pending_audio)
        self.pending_audio.clear()
        self.answer_when_idle = False
        return audio


def commit(core: SessionCore, turns: TurnTaking, request_id: str | None) -> None:
    """``input_audio.commit``: the runtime commits the buffer; the turn comes back."""
    core.emit(CommitInputAudio(request_id))


def clear(core: SessionCore, turns: TurnTaking) -> None:
    """``input_audio.clear``."""
    core.emit(ClearInputAudio())
    core.session.push_event(INPUT_CLEARED, {})


def on_voice_event(core: SessionCore, event: InputEvent) -> None:
    """A voice event of the turn detector (or of a commit)."""
    turns = core.voice()
    try:
        _apply(core, turns, event)
    except ProtocolViolation as violation:
        core.refuse(violation)
    core.emit(WAKE)
    core.emit(PERSIST)


def _apply(core: SessionCore, turns: TurnTaking, event: InputEvent) -> None:
    session = core.session
    detection = turns.settings.turn_detection
    if isinstance(event, SpeechStarted):
        turns.speaking = True
        session.push_event(SPEECH_STARTED, {"audio_start_ms": event.audio_ms})
        active = session.active
        turns.barged = None
        if active is not None and detection.interrupt_response:
            turns.barge_ins += 1
            turns.barged = active
            responding.stop(core, active, ResponseStatus.INTERRUPTED, reason="speech")
    elif isinstance(event, SpeechStopped):
        turns.speaking = False
        session.push_event(
            SPEECH_STOPPED, {"audio_end_ms": event.audio_ms, "speech_ms": event.speech_ms}
        )
    elif isinstance(event, SpeechDiscarded):
        session.push_event(
            INPUT_DISCARDED,
            {"audio_start_ms": event.start_ms, "audio_end_ms": event.end_ms, "reason": "too_short"},
        )
        _resume_cut_off(core, turns)
    elif isinstance(event, TurnCommitted):
        turns.barged = None
        session.add_user_text(audio_turn_text(event.duration_ms))
        session.push_event(
            INPUT_COMMITTED,
            {
                "audio_start_ms": event.start_ms,
                "audio_end_ms": event.end_ms,
                "duration_ms": event.duration_ms,
            },
        )
        turns.keep_audio(event.audio)
        if event.complete and detection.create_response:
            if session.active is None:
                responding.start(core, session.begin_response())
            else:
                # Queued behind the running answer, like input.text; answered next.
                turns.answer_when_idle = True


def response_ended(core: SessionCore, turns: TurnTaking) -> None:
    """A response ended: answer a turn that waited for it, unless the user talks now."""
    session = core.session
    if not turns.answer_when_idle or session.active is not None or turns.speaking:
        return
    turns.answer_when_idle = False
    if session.conversation.awaiting_answer:
        responding.start(core, session.begin_response())


def _resume_cut_off(core: SessionCore, turns: TurnTaking) -> None:
    """A cough interrupted the answer: go on from what the user heard."""
    barged, turns.barged = turns.barged, None
    session = core.session
    if (
        barged is None
        or session.active is not None
        or session.last_response is not barged
        or barged.status is not ResponseStatus.INTERRUPTED
    ):
        return
    try:
        response = session.continue_response(barged.id)
    except ProtocolViolation:
        # The conversation moved on meanwhile (an input.text): nothing to resume.
        return
    responding.start(core, response)
