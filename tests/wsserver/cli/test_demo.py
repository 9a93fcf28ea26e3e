"""``wsserver serve --demo``: every feature shown against the running server."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from tests.processes import WSSERVER
from tests.processes import cli_env as _env
from wsserver.cli.demo_tools import get_weather


def test_serve_demo_shows_every_feature_and_keeps_serving() -> None:
    process = subprocess.Popen(
        [*WSSERVER, "serve", "--port", "0", "--demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            lines.append(line)
            if "--- demo done ---" in line:
                break
        output = "".join(lines)
        assert "--- demo done ---" in output, output
        assert "status interrupted" in output
        assert "reconnects 1" in output
        assert "[tool call get_weather {'city': 'Oslo'}]" in output
        assert "resp_1: interrupted (speech)" in output
        assert "resp_2: completed" in output
        assert process.poll() is None, "the server stopped after the demo"
    finally:
        process.terminate()
        process.wait(10)


def test_serve_demo_on_the_local_engine_gets_real_answers() -> None:
    """``wsserver serve --engine local --stt whisper --tts piper --demo``: SmolLM2 answers,
    is interrupted, resumes, calls the weather tool (the demo turns the small-model aid
    on) and answers from its result; a question spoken by piper is heard and answered aloud.
    (The README's command is the same without the speech flags, which only add the last part.)
    """
    for module in ("xllamacpp", "faster_whisper", "piper"):
        pytest.importorskip(module)
    flags = ["--engine", "local", "--local-parallel=1", "--stt", "whisper", "--tts", "piper"]
    process = subprocess.Popen(
        [*WSSERVER, "serve", "--port", "0", *flags, "--demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(),
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            lines.append(line)
            if "--- demo done ---" in line or not line:
                break
        output = "".join(lines)
        assert "--- demo done ---" in output, output
        first = output.split("user: what is a websocket?\nassistant: ", 1)[1].split("\n")[0]
        assert len(re.findall(r"[A-Za-z]+", first)) >= 8, first
        assert "status interrupted" in output
        assert "reconnects 1" in output
        assert "[tool call get_weather {'city': 'Paris'}]" in output
        answer = output.split("[tool call get_weather {'city': 'Paris'}]\nassistant: ", 1)[1]
        weather = get_weather("Paris")
        assert f"{weather['temperature_c']} °C" in answer.split("\n")[0], answer
        heard = output.split("  [heard: ", 1)[1].split("]", 1)[0]
        assert "bees" in heard.lower(), heard
        spoken = output.split("assistant (spoken): ", 1)[1].split("\n")
        assert len(re.findall(r"[A-Za-z]+", spoken[0])) >= 5, spoken
        audio_ms = re.search(r"audio sent (\d+) ms", spoken[1])
        assert audio_ms and int(audio_ms.group(1)) > 1000, spoken
    finally:
        process.terminate()
        process.wait(10)
