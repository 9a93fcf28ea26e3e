"""``wsserver chat --audio-in``: a WAV file as the microphone, run as a user would."""

from __future__ import annotations

import subprocess
import wave
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import WSSERVER, WorkerProcess, cli_env
from tests.wsserver.audio_fixtures import FIXTURES


@pytest.fixture(scope="module")
def voice_worker() -> Iterator[WorkerProcess]:
    """A worker whose answers are long enough (3 s spoken) to talk over."""
    worker = WorkerProcess("--decode-rate", "20", "--answer-tokens", "60", name="voice")
    worker.start()
    yield worker
    worker.stop()


def chat(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WSSERVER, "chat", "--url", url, *args],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
    )


def test_talking_over_an_answer_interrupts_it_and_gets_the_turn_answered(
    voice_worker: WorkerProcess, tmp_path: Path
) -> None:
    out = tmp_path / "answer.wav"
    result = chat(
        voice_worker.url,
        "tell me a long story",
        "--audio-in",
        str(FIXTURES / "speech_stop.wav"),
        "--audio-out",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "[interrupted (speech); audio received" in text
    assert text.index("[interrupted") < text.index("[turn committed") < text.index("[completed")
    with wave.open(str(out)) as wav:
        seconds = wav.getnframes() / wav.getframerate()
    # The second answer plays in full: 60 tokens of 50 ms.
    assert seconds == pytest.approx(3.0)
    assert "audio received 3.00 s" in text


def test_manual_turn_detection_commits_at_the_end_of_the_file(
    voice_worker: WorkerProcess,
) -> None:
    result = chat(
        voice_worker.url,
        "--audio-in",
        str(FIXTURES / "speech_hello.wav"),
        "--turn-detection",
        "manual",
        "--max-output-tokens",
        "5",
    )
    assert result.returncode == 0, result.stderr
    assert "[speech started" not in result.stdout
    assert "[turn committed" in result.stdout
    assert "[incomplete (max_output_tokens)" in result.stdout


def test_a_file_without_speech_exits_nonzero(voice_worker: WorkerProcess) -> None:
    result = chat(voice_worker.url, "--audio-in", str(FIXTURES / "noise.wav"))
    assert result.returncode == 1
    assert "no spoken turn" in result.stderr


def test_a_file_that_is_not_mono_pcm16_is_refused(
    voice_worker: WorkerProcess, tmp_path: Path
) -> None:
    stereo = tmp_path / "stereo.wav"
    with wave.open(str(stereo), "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes(bytes(6400))
    result = chat(voice_worker.url, "--audio-in", str(stereo))
    assert result.returncode == 2
    assert "mono 16-bit PCM" in result.stderr
