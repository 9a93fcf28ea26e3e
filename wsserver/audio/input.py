"""Input audio of one session: validation, real-time pacing, detection and turns.

Sans-I/O like :mod:`protocol`: the caller passes each frame with the time it
arrived and acts on the events returned. Chunks are PCM16 mono at the
session's rate, 10 to 100 ms long, numbered by the client (a chunk whose seq
is not above the last one accepted is a resend and is ignored, so a client may
re-send unacknowledged audio after a reconnect). The uncommitted turn is
bounded; audio faster than real time beyond a small burst is dropped, so a
client can never make the server buffer (or analyse) more than it would hear.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.audio_frame import AudioFrame, AudioKind
from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.messages import AudioSettings

# The events are the session core's inputs: defined there, re-exported here.
from protocol.session.inputs import (
    InputEvent,
    SpeechDiscarded,
    SpeechStarted,
    SpeechStopped,
    TurnCommitted,
)
from wsserver.audio.vad import VadSettings, VoiceDetector, pcm16

__all__ = [
    "AudioInput",
    "AudioInputLimits",
    "InputEvent",
    "SpeechDiscarded",
    "SpeechStarted",
    "SpeechStopped",
    "TurnCommitted",
    "vad_settings",
]

MIN_CHUNK_MS = 10
MAX_CHUNK_MS = 100
_DETECTION_LAG_MS = 200
"""Upper bound of how far behind the audio a detector reports a start (run + window)."""
_PACE_SLACK = 1.02
"""Clocks differ a little; real time is measured with 2% to spare."""


@dataclass(frozen=True, slots=True)
class AudioInputLimits:
    """Bounds on one session's input audio."""

    max_turn_ms: int = 60_000
    """Longest uncommitted turn (server VAD commits there; manual mode refuses more)."""
    max_ahead_ms: int = 1_500
    """How far ahead of real time a client may send (a burst after a stall): the SDKs'
    1 s resend after a reconnect, and the live audio right behind it."""


class RealtimePace:
    """A budget of audio milliseconds that refills with the wall clock."""

    __slots__ = ("_credit_ms", "_last", "dropping", "max_ahead_ms")

    def __init__(self, max_ahead_ms: int, now: float) -> None:
        self.max_ahead_ms = max_ahead_ms
        self._credit_ms = float(max_ahead_ms)
        self._last = now
        self.dropping = False

    def take(self, duration_ms: float, now: float) -> bool:
        """Whether a chunk of ``duration_ms`` arriving at ``now`` keeps to real time."""
        elapsed_ms = max(0.0, now - self._last) * 1000.0 * _PACE_SLACK
        self._last = now
        self._credit_ms = min(float(self.max_ahead_ms), self._credit_ms + elapsed_ms)
        if duration_ms > self._credit_ms:
            return False
        self._credit_ms -= duration_ms
        return True


class AudioInput:
    """One session's microphone stream."""

    __slots__ = (
        "_bytes_per_ms",
        "_detector",
        "_full_reported",
        "_pace",
        "_speech_start_ms",
        "_turn",
        "dropped_chunks",
        "duplicate_chunks",
        "last_seq",
        "limits",
        "received_ms",
        "settings",
    )

    def __init__(
        self,
        settings: AudioSettings,
        detector: VoiceDetector | None,
        limits: AudioInputLimits,
        now: float,
    ) -> None:
        self.settings = settings
        self.limits = limits
        self._detector = detector
        self._pace = RealtimePace(limits.max_ahead_ms, now)
        self._bytes_per_ms = settings.sample_rate * 2 / 1000
        self._turn = bytearray()
        self._full_reported = False
        self._speech_start_ms = 0
        self.last_seq = -1
        """Seq of the newest accepted chunk (-1: none yet)."""
        self.received_ms = 0.0
        """Accepted audio so far: the timeline of every ``audio_ms`` offset."""
        self.dropped_chunks = 0
        self.duplicate_chunks = 0

    def set_detector(self, detector: VoiceDetector | None) -> None:
        """Detect with ``detector`` from the next chunk on (new settings); the turn stays."""
        self._detector = detector

    @property
    def manual(self) -> bool:
        """Whether the client commits turns itself."""
        return self._detector is None

    @property
    def speaking(self) -> bool:
        """Whether the detector hears speech now."""
        return self._detector is not None and self._detector.speaking

    @property
    def buffered_ms(self) -> int:
        """Audio in the uncommitted turn."""
        return int(len(self._turn) / self._bytes_per_ms)

    def accept(self, frame: AudioFrame, now: float) -> list[InputEvent]:
        """Take one chunk; returns what it caused. Raises for a chunk it refuses."""
        if frame.kind is not AudioKind.INPUT:
            raise ProtocolViolation(ErrorCode.INVALID_FRAME, "clients send audio frames of kind 1")
        if frame.seq <= self.last_seq:
            self.duplicate_chunks += 1
            return []
        duration_ms = len(frame.payload) / self._bytes_per_ms
        if not MIN_CHUNK_MS <= duration_ms <= MAX_CHUNK_MS:
            raise ProtocolViolation(
                ErrorCode.INVALID_AUDIO,
                f"chunk {frame.seq} is {duration_ms:g} ms of {self.settings.sample_rate} Hz audio; "
                f"chunks must be {MIN_CHUNK_MS}-{MAX_CHUNK_MS} ms",
            )
        if self.manual and self.buffered_ms + duration_ms > self.limits.max_turn_ms:
            self.dropped_chunks += 1
            if self._full_reported:
                return []
            # Once until the next commit or clear, like audio_too_fast: no error flood.
            self._full_reported = True
            raise ProtocolViolation(
                ErrorCode.AUDIO_BUFFER_FULL,
                f"the uncommitted turn holds {self.buffered_ms} ms, the limit is "
                f"{self.limits.max_turn_ms} ms; chunks from {frame.seq} are dropped until "
                "input_audio.commit or input_audio.clear",
                details={"chunk_seq": frame.seq},
            )
        if not self._pace.take(duration_ms, now):
            self.dropped_chunks += 1
            first = not self._pace.dropping
            self._pace.dropping = True
            if first:
                raise ProtocolViolation(
                    ErrorCode.AUDIO_TOO_FAST,
                    f"audio is arriving faster than real time (more than "
                    f"{self.limits.max_ahead_ms} ms ahead); chunks from {frame.seq} are "
                    f"dropped until the pace is real time again",
                    details={"chunk_seq": frame.seq},
                )
            return []
        self._pace.dropping = False
        self.last_seq = frame.seq
        self.received_ms += duration_ms
        self._turn += frame.payload
        if self._detector is None:
            return [self.commit()] if frame.last else []
        return self._detect(frame.payload)

    def _detect(self, payload: bytes) -> list[InputEvent]:
        assert self._detector is not None
        events: list[InputEvent] = []
        for boundary in self._detector.feed(pcm16(payload)):
            if boundary.kind == "speech_started":
                self._speech_start_ms = boundary.audio_ms
                padding = self.settings.turn_detection.prefix_padding_ms
                self._keep_from(boundary.audio_ms - padding)
                events.append(SpeechStarted(boundary.audio_ms))
            else:
                speech_ms = boundary.audio_ms - self._speech_start_ms
                events.append(SpeechStopped(boundary.audio_ms, speech_ms))
                ending = self._end_of_speech(speech_ms, boundary.audio_ms)
                if ending is not None:
                    events.append(ending)
        if self._detector.speaking:
            if self.buffered_ms >= self.limits.max_turn_ms:
                # A monologue past the bound is cut into turns rather than refused;
                # the user is still talking, so nothing answers a part by itself.
                events.append(self.commit(complete=False))
        else:
            # The detector reports a start up to min_speech_ms (and a chunk) late:
            # keep enough that the padding before the start is still there.
            detection = self.settings.turn_detection
            self._keep_from(self.received_ms - detection.prefix_padding_ms - _DETECTION_LAG_MS)
        return events

    def _end_of_speech(self, speech_ms: int, speech_end_ms: int) -> InputEvent | None:
        if self._turn_start_ms() >= speech_end_ms:
            # A long turn was cut just before the speech ended: only silence is left.
            self._turn.clear()
            return None
        shortest = self.settings.turn_detection.false_interruption_ms
        if shortest is not None and speech_ms < shortest:
            start = int(self._turn_start_ms())
            self._turn.clear()
            return SpeechDiscarded(start, int(self.received_ms))
        return self.commit()

    def _keep_from(self, start_ms: float) -> None:
        """Drop buffered audio before ``start_ms`` of the stream."""
        excess = int((start_ms - self._turn_start_ms()) * self._bytes_per_ms)
        excess -= excess % 2
        if excess > 0:
            del self._turn[:excess]

    def _turn_start_ms(self) -> float:
        return max(0.0, self.received_ms - len(self._turn) / self._bytes_per_ms)

    def commit(self, *, complete: bool = True) -> TurnCommitted:
        """Make the buffered audio a turn (``nothing_to_commit`` when there is none)."""
        if not self._turn:
            raise ProtocolViolation(ErrorCode.NOTHING_TO_COMMIT, "no input audio is buffered")
        turn = TurnCommitted(
            bytes(self._turn), round(self._turn_start_ms()), round(self.received_ms), complete
        )
        self._turn.clear()
        self._full_reported = False
        return turn

    def clear(self) -> None:
        """Drop the uncommitted audio."""
        self._turn.clear()
        self._full_reported = False


def vad_settings(settings: AudioSettings) -> VadSettings:
    """Detector settings from the session's turn detection."""
    detection = settings.turn_detection
    return VadSettings(
        threshold=detection.threshold,
        prefix_padding_ms=detection.prefix_padding_ms,
        silence_duration_ms=detection.silence_duration_ms,
    )
