"""A session's input audio: binary frames decoded and turned into turn-detector events.

The runtime owns one :class:`VoiceInput` per session started with audio. It
decodes each frame, feeds it to :class:`wsserver.audio.input.AudioInput`
(validation, pacing, detection) and hands the events it reports to the
session core, which decides what they mean (``protocol.session.turn_taking``).
That handing over (a frame, a commit, new settings) is :class:`VoiceHandling`,
a base of :class:`wsserver.session.runtime.SessionRuntime`.
"""

from __future__ import annotations

import time
from typing import Protocol

from protocol.audio_frame import decode_audio_frame
from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.messages import AudioSettings
from protocol.session import SessionCore
from protocol.session.effects import CommitInputAudio, ConfigureVoice
from protocol.session.inputs import Input, SpeechStarted
from wsserver.audio.input import AudioInput, AudioInputLimits, InputEvent
from wsserver.audio.selector import open_detector
from wsserver.metrics.meter import NoMeter
from wsserver.session.context import RuntimeContext


class VoiceInput:
    """The input audio of one session."""

    __slots__ = ("input", "kind", "settings")

    def __init__(self, settings: AudioSettings, kind: str, limits: AudioInputLimits) -> None:
        self.settings = settings
        self.kind = kind
        self.input = AudioInput(settings, open_detector(kind, settings), limits, time.monotonic())

    def reconfigure(self, settings: AudioSettings) -> None:
        """Follow new settings (``session.update``; the sample rate is the same).

        The uncommitted audio, the chunk numbering and the timeline are kept; the
        detector is made again with the new thresholds (or none: manual turns), so a
        speech it was hearing is detected afresh from the next chunk.
        """
        assert settings.sample_rate == self.settings.sample_rate
        self.settings = settings
        self.input.settings = settings
        self.input.set_detector(open_detector(self.kind, settings))

    def accept(self, frame: bytes) -> list[InputEvent]:
        """A binary audio frame from the client: what it caused (raises for a refused one)."""
        return self.input.accept(decode_audio_frame(frame), time.monotonic())

    def commit(self) -> InputEvent:
        """``input_audio.commit``: the buffered audio as a turn (raises when there is none)."""
        return self.input.commit()

    def clear(self) -> None:
        """``input_audio.clear``."""
        self.input.clear()


class _VoicedRuntime(Protocol):
    """The parts of the runtime its input audio uses."""

    core: SessionCore
    context: RuntimeContext
    meter: NoMeter
    voice: VoiceInput | None

    def feed(self, event: Input) -> None: ...

    def reject(self, violation: ProtocolViolation) -> None: ...


class VoiceHandling:
    """The runtime's input audio: frames and commits to the core, settings followed."""

    __slots__ = ()  # the runtime's slots hold everything

    voice: VoiceInput | None
    """The session's input audio (``None`` until it has audio); a slot of the runtime."""

    def audio_frame(self: _VoicedRuntime, frame: bytes) -> None:
        """A binary audio frame; a refused one becomes an in-band error."""
        voice = self.voice
        if voice is None:
            message = "this session was started without audio"
            self.reject(ProtocolViolation(ErrorCode.AUDIO_NOT_ENABLED, message))
            return
        try:
            events = voice.accept(frame)
        except ProtocolViolation as violation:
            self.reject(violation)
            return
        # Most chunks cause nothing (50 a second each): the core hears only events.
        for event in events:
            if type(event) is SpeechStarted and self.core.session.active is not None:
                self.meter.speech_started()
            self.feed(event)

    def configure_voice(self: _VoicedRuntime, effect: ConfigureVoice) -> None:
        """``session.update`` changed the audio settings: input audio follows them."""
        if self.voice is None:
            self.voice = VoiceInput(effect.settings, self.context.vad, self.context.audio_limits)
        else:
            self.voice.reconfigure(effect.settings)

    def commit_audio(self: _VoicedRuntime, effect: CommitInputAudio) -> None:
        """Commit the buffered input audio; the turn (or the refusal) goes to the core."""
        voice = self.voice
        assert voice is not None
        try:
            turn = voice.commit()
        except ProtocolViolation as violation:
            if violation.request_id is None:
                violation.request_id = effect.request_id
            self.reject(violation)
            return
        self.feed(turn)
