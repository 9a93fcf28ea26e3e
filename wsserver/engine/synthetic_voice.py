"""Synthetic, speech-like audio for the simulated engine.

Each token is "spoken" as a voiced syllable: a few harmonics of a pitch between
110 and 220 Hz, weighted like the first two formants of a vowel, under an
attack/decay envelope with a short pause at the end. It is not speech, but it
has speech's pitch, spectrum and rhythm, which is what players, voice-activity
detectors and bandwidth figures care about. Syllables come from a small bank
computed once per (sample rate, length), so a token costs a lookup, not math.
"""

from __future__ import annotations

import functools

import numpy as np

_BANK_SIZE = 32
_LEVEL = 0.18
"""Peak amplitude (about -15 dBFS): a comfortable speaking level."""


@functools.cache
def syllable_bank(sample_rate: int, samples: int) -> tuple[bytes, ...]:
    """``_BANK_SIZE`` different syllables of ``samples`` PCM16 samples each."""
    rng = np.random.default_rng(sample_rate * 100_003 + samples)
    t = np.arange(samples, dtype=np.float64) / sample_rate
    envelope = _envelope(samples)
    bank = []
    for _ in range(_BANK_SIZE):
        pitch = rng.uniform(110.0, 220.0)
        glide = rng.uniform(-0.15, 0.15)  # intonation: the pitch drifts over the syllable
        phase = 2 * np.pi * np.cumsum(pitch * (1 + glide * t / max(t[-1], 1e-9))) / sample_rate
        formants = (rng.uniform(300, 800), rng.uniform(900, 2200))
        wave = np.zeros(samples)
        for harmonic in range(1, 16):
            frequency = pitch * harmonic
            if frequency >= sample_rate / 2:
                break
            weight = sum(np.exp(-(((frequency - f) / 180.0) ** 2)) for f in formants) + 0.05
            wave += weight / harmonic * np.sin(harmonic * phase)
        wave *= envelope / max(np.abs(wave).max(), 1e-9) * _LEVEL
        bank.append((wave * 32767).astype("<i2").tobytes())
    return tuple(bank)


def _envelope(samples: int) -> np.ndarray:
    attack = max(1, samples // 8)
    release = max(1, samples // 4)
    pause = samples // 8
    shape = np.ones(samples)
    shape[:attack] = np.linspace(0.0, 1.0, attack)
    end = samples - pause
    shape[end - release : end] = np.linspace(1.0, 0.0, release)
    shape[end:] = 0.0
    return shape


class SyntheticVoice:
    """Speaks tokens at one sample rate, one fixed-length syllable per token."""

    __slots__ = ("_bank", "chunk_ms")

    def __init__(self, sample_rate: int, chunk_ms: float) -> None:
        samples = max(1, round(sample_rate * chunk_ms / 1000))
        self._bank = syllable_bank(sample_rate, samples)
        self.chunk_ms = samples * 1000 / sample_rate

    def speak(self, token_hash: int) -> bytes:
        """The syllable for a token (deterministic)."""
        return self._bank[token_hash % _BANK_SIZE]
