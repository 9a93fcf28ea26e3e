"""A session's input audio: binary frames decoded and turned into turn-detector events.

The runtime owns one :class:`VoiceInput` per session started with audio. It
decodes each frame, feeds it to :class:`wsserver.audio.input.AudioInput`
(validation, pacing, detection) and hands the events it reports to the
session core, which decides what they mean (``protocol.session.turn_taking``).
"""

from __future__ import annotations

import time

from protocol.audio_frame import decode_audio_frame
from protocol.messages import AudioSettings
from wsserver.audio.input import AudioInput, AudioInputLimits, InputEvent
from wsserver.audio.selector import open_detector


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
