"""The real speech models for the tests, loaded once per test process.

Whisper and piper take about a second each to load: every test that needs one
shares the same loaded model (the pipeline's own loaders cache per process too,
so a worker started with ``--stt whisper --tts piper`` reuses them).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np
import pytest


def _needed(module: str) -> None:
    pytest.importorskip(module, reason="the voice extra is not installed")


@functools.cache
def piper_voice() -> Any:
    """The pinned piper voice (en_US-joe-medium)."""
    _needed("piper")
    from wsserver.engine.pipeline.piper_voice import load_voice

    return load_voice()


@functools.cache
def whisper_model() -> Any:
    """The pinned Whisper base model."""
    _needed("faster_whisper")
    from wsserver.engine.pipeline.whisper import load_model

    return load_model()


@functools.cache
def spoken(text: str, rate: int = 16000) -> bytes:
    """``text`` spoken by piper, as PCM16 mono at ``rate`` (made at test time, cached,
    the same in every run)."""
    piper_voice()  # skips without the voice extra
    from wsserver.engine.pipeline.piper_voice import spoken_pcm

    # Without sampling noise: the same words are the same audio in every run.
    return spoken_pcm(text, rate, steady=True)


def words(text: str) -> list[str]:
    """Lowercase words without punctuation (what a transcript is compared by)."""
    return re.findall(r"[a-z0-9']+", text.lower())


def word_errors(expected: str, heard: str) -> int:
    """Word-level edit distance between two texts."""
    want, got = words(expected), words(heard)
    row = list(range(len(got) + 1))
    for i, word in enumerate(want, 1):
        previous, row[0] = row[0], i
        for j, other in enumerate(got, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (word != other))
    return row[-1]


def rms(audio: bytes) -> float:
    """Root mean square of PCM16 samples (0 for silence, ~1000+ for speech)."""
    samples = np.frombuffer(audio, dtype=np.int16).astype(np.float64)
    return float(np.sqrt(np.mean(samples**2))) if samples.size else 0.0
