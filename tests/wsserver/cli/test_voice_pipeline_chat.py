"""``wsserver serve --stt whisper --tts piper`` and ``wsserver chat --audio-in``, run by hand."""

from __future__ import annotations

import wave
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import WorkerProcess
from tests.wsserver.cli.test_voice_chat import chat
from tests.wsserver.speech_models import rms, spoken, word_errors

QUESTION = "Turn on the kitchen light, please."


@pytest.fixture(scope="module")
def speaking_worker() -> Iterator[WorkerProcess]:
    pytest.importorskip("faster_whisper", reason="the voice extra is not installed")
    worker = WorkerProcess(
        "--stt", "whisper", "--tts", "piper", "--answer-tokens", "12", name="speaking"
    )
    worker.start(timeout=60)
    yield worker
    worker.stop()


def test_chat_prints_what_the_user_said_and_saves_the_spoken_answer(
    speaking_worker: WorkerProcess, tmp_path: Path
) -> None:
    assert "stt: whisper, tts: piper" in "".join(speaking_worker.lines)
    question = tmp_path / "question.wav"
    with wave.open(str(question), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes(bytes(9600) + spoken(QUESTION))
    answer = tmp_path / "answer.wav"
    result = chat(speaking_worker.url, "--audio-in", str(question), "--audio-out", str(answer))
    assert result.returncode == 0, result.stdout + result.stderr
    (said,) = [line for line in result.stdout.splitlines() if line.startswith("you said: ")]
    assert word_errors(QUESTION, said.removeprefix("you said: ")) <= 2, said
    assert result.stdout.index("you said: ") < result.stdout.index("[completed")
    with wave.open(str(answer)) as wav:
        audio = wav.readframes(wav.getnframes())
        seconds = wav.getnframes() / wav.getframerate()
    # 12 words spoken by piper: a few seconds, and not silence.
    assert 1.5 <= seconds <= 10
    assert rms(audio) > 500
