"""The Silero detector on the energy detector's fixtures: real speech, silence, steady noise."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.wsserver.audio.test_vad import SPEECH, load
from wsserver.audio import silero
from wsserver.audio.silero import SileroVad, VadUnavailable
from wsserver.audio.vad import VadEvent, VadSettings

LEAD_MS = 500


def run(samples: np.ndarray, rate: int, chunk_ms: int = 20, **settings: float) -> list[VadEvent]:
    vad = SileroVad(rate, VadSettings(**settings))  # type: ignore[arg-type]
    step = rate * chunk_ms // 1000
    events: list[VadEvent] = []
    for start in range(0, samples.size, step):
        events += vad.feed(samples[start : start + step])
    return events


def over(speech: np.ndarray, background: str, rate: int) -> np.ndarray:
    """Speech after LEAD_MS of background, the background going on under it and after."""
    bed, _ = load(background)
    lead = rate * LEAD_MS // 1000
    length = lead + speech.size + rate
    total = np.resize(bed, length).astype(np.int32)  # np.resize repeats the bed
    total[lead : lead + speech.size] += speech
    return np.clip(total, -32768, 32767).astype(np.int16)


def to_24khz(samples: np.ndarray) -> np.ndarray:
    times = np.arange(samples.size * 3 // 2) * (2 / 3)
    upsampled: np.ndarray = np.interp(times, np.arange(samples.size), samples)
    return upsampled.round().astype(np.int16)


@pytest.mark.parametrize("name", SPEECH)
@pytest.mark.parametrize("background", ["silence", "noise", "hum"])
def test_fires_on_speech_with_its_boundaries(name: str, background: str) -> None:
    speech, rate = load(name)
    events = run(over(speech, background, rate), rate)
    assert [e.kind for e in events] == ["speech_started", "speech_stopped"]
    started, stopped = events
    speech_ms = speech.size * 1000 // rate
    # Onset within 150 ms of where the voice starts; the end no later than the
    # recording (whose tail is silent) plus one window.
    assert LEAD_MS - 50 <= started.audio_ms <= LEAD_MS + 150
    assert stopped.audio_ms - started.audio_ms >= speech_ms * 0.6
    assert stopped.audio_ms <= LEAD_MS + speech_ms + 100


@pytest.mark.parametrize("rate", [16000, 24000])
@pytest.mark.parametrize("name", ["silence", "noise", "hum"])
def test_quiet_on_silence_and_steady_noise(name: str, rate: int) -> None:
    samples, _ = load(name)
    stream = np.concatenate([samples, samples])
    if rate == 24000:
        stream = to_24khz(stream)
    assert run(stream, rate) == []


@pytest.mark.parametrize("name", SPEECH)
@pytest.mark.parametrize("background", ["silence", "noise"])
def test_24khz_input_gives_the_16khz_boundaries(name: str, background: str) -> None:
    speech, rate = load(name)
    stream = over(speech, background, rate)
    at_16k = run(stream, rate)
    at_24k = run(to_24khz(stream), 24000)
    assert [e.kind for e in at_24k] == [e.kind for e in at_16k]
    # Resampling twice changes the audio slightly: allow one 32 ms window either way.
    for slow, fast in zip(at_16k, at_24k, strict=True):
        assert abs(slow.audio_ms - fast.audio_ms) <= 32


@pytest.mark.parametrize("rate", [16000, 24000])
@pytest.mark.parametrize("chunk_ms", [10, 30, 100])
def test_any_chunk_length_gives_the_same_boundaries(chunk_ms: int, rate: int) -> None:
    speech, _ = load("speech_hello")
    stream = over(speech, "noise", 16000)
    if rate == 24000:
        stream = to_24khz(stream)
    assert run(stream, rate, chunk_ms) == run(stream, rate, 20)


def test_detectors_keep_their_own_state() -> None:
    # Many sessions share one inference session; interleaving two streams must give
    # each the events it gets alone.
    speech, rate = load("speech_weather")
    talk = over(speech, "noise", rate)
    quiet = np.resize(load("hum")[0], talk.size)
    talker, listener = SileroVad(rate), SileroVad(rate)
    step = rate // 50
    talk_events: list[VadEvent] = []
    quiet_events: list[VadEvent] = []
    for start in range(0, talk.size, step):
        talk_events += talker.feed(talk[start : start + step])
        quiet_events += listener.feed(quiet[start : start + step])
    assert talk_events == run(talk, rate)
    assert quiet_events == []


def test_silence_duration_decides_when_the_turn_ends() -> None:
    speech, rate = load("speech_stop")
    stream = over(speech, "silence", rate)
    short = run(stream, rate, silence_duration_ms=200)
    long = run(stream, rate, silence_duration_ms=800)
    assert len(short) >= len(long)
    assert short[-1].kind == long[-1].kind == "speech_stopped"
    assert short[-1].audio_ms <= long[-1].audio_ms


def test_speaking_follows_the_events() -> None:
    speech, rate = load("speech_hello")
    stream = over(speech, "silence", rate)
    vad = SileroVad(rate)
    seen: list[bool] = []
    for start in range(0, stream.size, rate // 50):
        if vad.feed(stream[start : start + rate // 50]):
            seen.append(vad.speaking)
    assert seen == [True, False]


def test_unsupported_sample_rate_is_refused() -> None:
    with pytest.raises(ValueError, match="8000"):
        SileroVad(8000)


def test_model_comes_from_the_installed_wheel() -> None:
    path = silero.model_path()
    assert path.name == "silero_vad.onnx"
    assert path.stat().st_size > 100_000


def test_missing_onnxruntime_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import onnxruntime` raise ImportError.
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    silero._shared_session.cache_clear()
    try:
        with pytest.raises(VadUnavailable, match="pip install --no-deps silero-vad"):
            SileroVad(16000)
    finally:
        silero._shared_session.cache_clear()
