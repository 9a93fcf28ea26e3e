"""Voice turn taking: barge-in, answering a committed turn, false-interruption resume.

The turn detector (``wsserver.audio.input.AudioInput``) reports speech and
turns; the decisions are here. Speech while an answer plays interrupts it
(the path of ``response.interrupt``), a committed turn starts an answer (or,
while one runs, is answered when it ends), and a "turn" too short to be one
(a cough) resumes the answer it cut off, as a continuation from what the
user heard.
"""

from __future__ import annotations

from protocol.errors import ProtocolViolation
from protocol.events import (
    INPUT_CLEARED,
    INPUT_COMMITTED,
    INPUT_DISCARDED,
    SPEECH_STARTED,
    SPEECH_STOPPED,
)
from protocol.session import responding
from protocol.session.actions import CoreActions
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
from protocol.session.responses import ResponseStatus
from protocol.session.turns import TurnTaking, audio_turn_text


def commit(core: CoreActions, turns: TurnTaking, request_id: str | None) -> None:
    """``input_audio.commit``: the runtime commits the buffer; the turn comes back."""
    core.emit(CommitInputAudio(request_id))


def clear(core: CoreActions, turns: TurnTaking) -> None:
    """``input_audio.clear``."""
    core.emit(ClearInputAudio())
    core.session.push_event(INPUT_CLEARED, {})


def on_voice_event(core: CoreActions, event: InputEvent) -> None:
    """A voice event of the turn detector (or of a commit)."""
    turns = core.voice()
    try:
        _apply(core, turns, event)
    except ProtocolViolation as violation:
        core.refuse(violation)
    core.emit(WAKE)
    core.emit(PERSIST)


def _apply(core: CoreActions, turns: TurnTaking, event: InputEvent) -> None:
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


def response_ended(core: CoreActions, turns: TurnTaking) -> None:
    """A response ended: answer a turn that waited for it, unless the user talks now."""
    session = core.session
    if not turns.answer_when_idle or session.active is not None or turns.speaking:
        return
    turns.answer_when_idle = False
    if session.conversation.awaiting_answer:
        responding.start(core, session.begin_response())


def _resume_cut_off(core: CoreActions, turns: TurnTaking) -> None:
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
