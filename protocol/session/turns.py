"""The voice state of a session started with audio (the decisions are in ``turn_taking``)."""

from __future__ import annotations

from protocol.messages import AudioSettings
from protocol.session.responses import ResponseState
from protocol.spoken_turns import audio_turn_text

__all__ = ["TurnTaking", "audio_turn_text"]


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
