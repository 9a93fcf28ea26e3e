"""The energy detector on real speech (espeak-ng recordings), silence and steady noise."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from wsserver.audio.vad import EnergyVad, VadEvent, VadSettings, pcm16

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "audio"
SPEECH = ["speech_hello", "speech_stop", "speech_weather"]


def load(name: str) -> tuple[np.ndarray, int]:
    with wave.open(str(FIXTURES / f"{name}.wav")) as wav:
        assert (wav.getnchannels(), wav.getsampwidth()) == (1, 2)
        return pcm16(wav.readframes(wav.getnframes())).copy(), wav.getframerate()


def run(samples: np.ndarray, rate: int, chunk_ms: int = 20, **settings: float) -> list[VadEvent]:
    vad = EnergyVad(rate, VadSettings(**settings))  # type: ignore[arg-type]
    step = rate * chunk_ms // 1000
    events: list[VadEvent] = []
    for start in range(0, samples.size, step):
        events += vad.feed(samples[start : start + step])
    return events


def mix(speech: np.ndarray, background: np.ndarray, lead_samples: int) -> np.ndarray:
    """Background, then speech over background, then background again."""
    total = np.concatenate([background[:lead_samples], np.zeros_like(speech), background])
    total = total.astype(np.int32)
    total[lead_samples : lead_samples + speech.size] += speech
    return np.clip(total, -32768, 32767).astype(np.int16)


@pytest.mark.parametrize("name", SPEECH)
@pytest.mark.parametrize("background", ["silence", "noise"])
def test_fires_on_speech_with_its_boundaries(name: str, background: str) -> None:
    speech, rate = load(name)
    bed, _ = load(background)
    lead = rate // 2
    events = run(mix(speech, bed, lead), rate)
    assert [e.kind for e in events] == ["speech_started", "speech_stopped"]
    started, stopped = events
    speech_ms = speech.size * 1000 // rate
    # Onset within 150 ms of where the voice starts; the end after it stops plus silence.
    assert 450 <= started.audio_ms <= 650
    assert stopped.audio_ms - started.audio_ms >= speech_ms * 0.6
    assert stopped.audio_ms <= 500 + speech_ms + 100


@pytest.mark.parametrize("name", ["silence", "noise", "hum"])
def test_quiet_on_silence_and_steady_noise(name: str) -> None:
    samples, rate = load(name)
    assert run(np.concatenate([samples, samples]), rate) == []


@pytest.mark.parametrize("chunk_ms", [10, 20, 30, 100])
def test_any_chunk_length_gives_the_same_boundaries(chunk_ms: int) -> None:
    speech, rate = load("speech_hello")
    silence, _ = load("silence")
    stream = mix(speech, silence, rate // 2)
    assert run(stream, rate, chunk_ms) == run(stream, rate, 20)


def test_silence_duration_decides_when_the_turn_ends() -> None:
    speech, rate = load("speech_stop")
    silence, _ = load("silence")
    stream = mix(speech, silence, rate // 2)
    short = run(stream, rate, silence_duration_ms=200)
    long = run(stream, rate, silence_duration_ms=800)
    # A short pause inside the sentence ends a turn only with the short setting.
    assert len(short) >= len(long)
    assert short[-1].kind == long[-1].kind == "speech_stopped"


def test_higher_threshold_needs_louder_speech() -> None:
    speech, rate = load("speech_hello")
    silence, _ = load("silence")
    quiet = (speech // 40).astype(np.int16)
    stream = mix(quiet, silence, rate // 2)
    assert run(stream, rate, threshold=0.0)
    assert run(stream, rate, threshold=1.0) == []


def test_24khz_input() -> None:
    speech, _ = load("speech_weather")
    upsampled = np.repeat(speech, 3)[::2]  # 16 kHz -> 24 kHz, crude but fine for energy
    silence = np.zeros(24000, dtype=np.int16)
    events = run(mix(upsampled, silence, 12000), 24000)
    assert [e.kind for e in events] == ["speech_started", "speech_stopped"]
