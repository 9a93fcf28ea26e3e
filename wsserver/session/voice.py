"""A session's voice: microphone turns in, barge-in, and playback-aware truncation.

The runtime owns one :class:`VoiceChannel` per session started with audio. It
turns what :class:`wsserver.audio.input.AudioInput` reports into session events
and into the same actions a client could ask for: speech while an answer plays
interrupts it (the path of ``response.interrupt``), a committed turn starts an
answer, and a "turn" too short to be one (a cough) resumes the answer it cut
off, as a continuation from what the user heard.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from protocol.audio_frame import decode_audio_frame
from protocol.errors import ProtocolViolation
from protocol.events import (
    INPUT_CLEARED,
    INPUT_COMMITTED,
    INPUT_DISCARDED,
    SPEECH_STARTED,
    SPEECH_STOPPED,
)
from protocol.messages import AudioSettings
from protocol.server_session import ResponseState, ResponseStatus
from wsserver.audio.input import (
    AudioInput,
    AudioInputLimits,
    InputEvent,
    SpeechDiscarded,
    SpeechStarted,
    SpeechStopped,
    TurnCommitted,
    vad_settings,
)
from wsserver.audio.vad import EnergyVad, VoiceDetector

if TYPE_CHECKING:
    from wsserver.session.runtime import SessionRuntime


def make_detector(kind: str, settings: AudioSettings) -> VoiceDetector | None:
    """The session's detector: ``None`` in manual mode, else energy or Silero."""
    if settings.turn_detection.type == "manual":
        return None
    if kind == "silero":
        from wsserver.audio.silero import SileroVad

        return SileroVad(settings.sample_rate, vad_settings(settings))
    return EnergyVad(settings.sample_rate, vad_settings(settings))


def audio_turn_text(duration_ms: int) -> str:
    """The conversation's placeholder for a spoken turn (engines get the audio itself)."""
    return f"[audio {duration_ms} ms]"


class VoiceChannel:
    """Input audio and barge-in of one session."""

    __slots__ = (
        "_barged",
        "_runtime",
        "answer_when_idle",
        "barge_ins",
        "input",
        "pending_audio",
        "settings",
    )

    def __init__(
        self,
        runtime: SessionRuntime,
        settings: AudioSettings,
        detector: VoiceDetector | None,
        limits: AudioInputLimits,
    ) -> None:
        self._runtime = runtime
        self.settings = settings
        self.input = AudioInput(settings, detector, limits, time.monotonic())
        self.pending_audio = bytearray()
        """Audio of the turns committed since the last answer, for the engine."""
        self.answer_when_idle = False
        """A turn was committed while an answer ran: answer it when that one ends."""
        self._barged: ResponseState | None = None
        """The response the current speech interrupted (false-interruption recovery)."""
        self.barge_ins = 0

    def on_frame(self, frame: bytes) -> None:
        """A binary audio frame from the client (raises for a refused one)."""
        events = self.input.accept(decode_audio_frame(frame), time.monotonic())
        for event in events:
            self._apply(event)

    def commit(self) -> None:
        """``input_audio.commit``."""
        self._apply(self.input.commit())

    def clear(self) -> None:
        """``input_audio.clear``."""
        self.input.clear()
        self._runtime.session.push_event(INPUT_CLEARED, {})

    def _apply(self, event: InputEvent) -> None:
        runtime = self._runtime
        session = runtime.session
        detection = self.settings.turn_detection
        if isinstance(event, SpeechStarted):
            session.push_event(SPEECH_STARTED, {"audio_start_ms": event.audio_ms})
            active = session.active
            self._barged = None
            if active is not None and detection.interrupt_response:
                self.barge_ins += 1
                self._barged = active
                runtime.interrupt(active, reason="speech")
        elif isinstance(event, SpeechStopped):
            session.push_event(
                SPEECH_STOPPED, {"audio_end_ms": event.audio_ms, "speech_ms": event.speech_ms}
            )
        elif isinstance(event, SpeechDiscarded):
            session.push_event(
                INPUT_DISCARDED,
                {
                    "audio_start_ms": event.start_ms,
                    "audio_end_ms": event.end_ms,
                    "reason": "too_short",
                },
            )
            self._resume_cut_off()
        elif isinstance(event, TurnCommitted):
            self._barged = None
            session.add_user_text(audio_turn_text(event.duration_ms))
            session.push_event(
                INPUT_COMMITTED,
                {
                    "audio_start_ms": event.start_ms,
                    "audio_end_ms": event.end_ms,
                    "duration_ms": event.duration_ms,
                },
            )
            self._keep_audio(event.audio)
            if event.complete and detection.create_response:
                if session.active is None:
                    runtime.start_response()
                else:
                    # Queued behind the running answer, like input.text; answered next.
                    self.answer_when_idle = True

    def _keep_audio(self, audio: bytes) -> None:
        """Keep a turn's audio for the next engine request (bounded like one turn)."""
        limit = int(self.input.limits.max_turn_ms * self.settings.sample_rate * 2 / 1000)
        pending = self.pending_audio
        pending += audio
        if len(pending) > limit:
            del pending[: len(pending) - limit]

    def response_ended(self) -> None:
        """A response ended: answer a turn that waited for it, unless the user talks now."""
        session = self._runtime.session
        if not self.answer_when_idle or session.active is not None or self.input.speaking:
            return
        self.answer_when_idle = False
        if session.conversation.awaiting_answer:
            self._runtime.start_response()

    def _resume_cut_off(self) -> None:
        """A cough interrupted the answer: go on from what the user heard."""
        barged, self._barged = self._barged, None
        session = self._runtime.session
        if (
            barged is None
            or session.active is not None
            or session.last_response is not barged
            or barged.status is not ResponseStatus.INTERRUPTED
        ):
            return
        try:
            self._runtime.continue_response(barged.id)
        except ProtocolViolation:
            # The conversation moved on meanwhile (an input.text): nothing to resume.
            return

    def take_audio(self) -> bytes:
        """The committed turns' audio, handed to one engine request."""
        audio = bytes(self.pending_audio)
        self.pending_audio.clear()
        self.answer_when_idle = False
        return audio
