"""The committed WAV fixtures (espeak-ng speech, silence, steady noise) as PCM16 bytes."""

from __future__ import annotations

import wave
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "audio"
RATE = 16000
BYTES_PER_MS = RATE * 2 // 1000


def pcm(name: str) -> bytes:
    """A fixture's samples (16 kHz mono PCM16)."""
    with wave.open(str(FIXTURES / f"{name}.wav")) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, RATE)
        return wav.readframes(wav.getnframes())


def silence(ms: int) -> bytes:
    """Room tone from the silence fixture (it is 2 s long; repeated if needed)."""
    bed = pcm("silence")
    wanted = ms * BYTES_PER_MS
    return (bed * (wanted // len(bed) + 1))[:wanted]


def chunks(audio: bytes, chunk_ms: int = 20) -> list[bytes]:
    """Audio cut into chunks of ``chunk_ms``."""
    step = chunk_ms * BYTES_PER_MS
    return [audio[i : i + step] for i in range(0, len(audio), step)]
