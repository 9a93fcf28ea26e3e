"""Voice-activity detection on PCM16 audio, one detector per session.

The default detector needs nothing but numpy: it measures the energy of each
20 ms window against an adaptive noise floor. Speech starts after a short run of
loud windows (so a click does not count) and stops after the configured
silence; steady noise (a fan, a hum, hiss) raises the floor instead of
triggering. Settings follow the OpenAI Realtime API's ``server_vad``:
threshold, prefix padding and silence duration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

WINDOW_MS = 20
_EMPTY = np.zeros(0, dtype=np.int16)


@dataclass(frozen=True, slots=True)
class VadSettings:
    """How eagerly speech is detected and how long silence ends it."""

    threshold: float = 0.5
    """0..1: higher needs louder speech above the noise floor (0.5: about 18 dB)."""
    prefix_padding_ms: int = 300
    """Audio kept from before the detected start, so the first syllable is not cut."""
    silence_duration_ms: int = 500
    """Silence after speech that ends the user's turn."""
    min_speech_ms: int = 60
    """Loud audio needed before speech counts as started (ignores clicks)."""

    @property
    def margin_db(self) -> float:
        """Energy above the noise floor that counts as voice."""
        return 6.0 + 24.0 * min(1.0, max(0.0, self.threshold))


@dataclass(frozen=True, slots=True)
class VadEvent:
    """Speech started or stopped, at an offset into the session's input audio."""

    kind: str
    """``speech_started`` or ``speech_stopped``."""
    audio_ms: int


class VoiceDetector(Protocol):
    """Feeds on PCM16 and reports speech boundaries."""

    def feed(self, samples: np.ndarray) -> list[VadEvent]:
        """Process int16 samples; return the boundaries they contain."""
        ...

    @property
    def speaking(self) -> bool:
        """Whether the user is speaking now."""
        ...


class SpeechSegmenter:
    """Turns per-window voice decisions into speech started / stopped boundaries.

    Shared by every detector: they differ in how a window is judged (energy,
    a neural network), not in how runs of windows become a turn.
    """

    __slots__ = ("_loud_run", "_processed_ms", "_quiet_run", "settings", "speaking", "window_ms")

    def __init__(self, settings: VadSettings, window_ms: float) -> None:
        self.settings = settings
        self.window_ms = window_ms
        self.speaking = False
        self._processed_ms = 0.0
        self._loud_run = 0
        self._quiet_run = 0

    def window(self, voiced: bool) -> VadEvent | None:
        """Account one window; returns the boundary it completes, if any."""
        settings = self.settings
        now_ms = self._processed_ms
        self._processed_ms += self.window_ms
        if voiced:
            self._loud_run += 1
            self._quiet_run = 0
        else:
            self._quiet_run += 1
            self._loud_run = 0
        if not self.speaking and self._loud_run * self.window_ms >= settings.min_speech_ms:
            self.speaking = True
            start = now_ms - (self._loud_run - 1) * self.window_ms
            return VadEvent("speech_started", max(0, int(start)))
        if self.speaking and self._quiet_run * self.window_ms >= settings.silence_duration_ms:
            self.speaking = False
            end = now_ms - (self._quiet_run - 1) * self.window_ms
            return VadEvent("speech_stopped", int(end))
        return None


class EnergyVad:
    """Energy over an adaptive noise floor, in 20 ms windows."""

    # Floor tracking: falls fast to quieter audio, rises slowly to louder.
    _FALL = 0.5
    _RISE = 0.02
    _ABSOLUTE_FLOOR_DB = -70.0
    _MIN_VOICE_DB = -50.0

    def __init__(self, sample_rate: int, settings: VadSettings | None = None) -> None:
        self.sample_rate = sample_rate
        self.settings = settings or VadSettings()
        self.window = sample_rate * WINDOW_MS // 1000
        self._pending = np.zeros(0, dtype=np.int16)
        self._floor_db: float | None = None
        self._segmenter = SpeechSegmenter(self.settings, WINDOW_MS)
        self._scale = 1.0 / (self.window * 32768.0 * 32768.0)

    @property
    def speaking(self) -> bool:
        return self._segmenter.speaking

    @property
    def floor_db(self) -> float:
        """Current noise-floor estimate in dBFS."""
        return self._floor_db if self._floor_db is not None else self._ABSOLUTE_FLOOR_DB

    def feed(self, samples: np.ndarray) -> list[VadEvent]:
        if samples.size == self.window and not self._pending.size:
            # The common case (20 ms chunks): one window, no reshaping.
            window = samples.astype(np.float32)
            event = self._segmenter.window(self._voiced(self._energy(window)))
            return [] if event is None else [event]
        data = np.concatenate((self._pending, samples)) if self._pending.size else samples
        usable = data.size - data.size % self.window
        self._pending = data[usable:].copy() if usable < data.size else _EMPTY
        if usable == 0:
            return []
        # Thousands of sessions each feed a window every 20 ms: one dot product per
        # window costs a fraction of numpy's mean/sqrt/log10 on tiny arrays.
        windows = data[:usable].astype(np.float32).reshape(-1, self.window)
        events: list[VadEvent] = []
        for window in windows:
            event = self._segmenter.window(self._voiced(self._energy(window)))
            if event is not None:
                events.append(event)
        return events

    def _energy(self, window: np.ndarray) -> float:
        """Level of one float32 window in dBFS."""
        power = float(np.dot(window, window)) * self._scale
        return 10.0 * math.log10(max(power, 1e-14))

    def _voiced(self, energy: float) -> bool:
        if self._floor_db is None:
            # Streams start with the room, not the voice: the first window sets the floor.
            self._floor_db = max(energy, self._ABSOLUTE_FLOOR_DB)
        loud = energy > self._floor_db + self.settings.margin_db and energy > self._MIN_VOICE_DB
        rate = self._RISE if energy > self._floor_db else self._FALL
        if self._segmenter.speaking:
            # Voice comes and goes; a noise that just switched on does not. Creeping up
            # during "speech" ends a steady noise's false turn within seconds.
            rate = self._RISE / 4 if energy > self._floor_db else 0.0
        self._floor_db += rate * (energy - self._floor_db)
        self._floor_db = max(self._floor_db, self._ABSOLUTE_FLOOR_DB)
        return loud


def pcm16(payload: bytes) -> np.ndarray:
    """Little-endian PCM16 bytes as int16 samples (no copy)."""
    return np.frombuffer(payload, dtype="<i2")


def duration_ms(samples: int, sample_rate: int) -> int:
    """Length of ``samples`` in milliseconds."""
    return math.floor(samples * 1000 / sample_rate)
