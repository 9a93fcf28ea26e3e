"""``wsserver chat``: one question, an interactive chat, the demo tools; real subprocesses."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.processes import WSSERVER, WorkerProcess
from tests.processes import cli_env as _env
from tests.wsserver.client.stand_in import KEY, TOKEN, run_cli, running_stand_in


def _read_url(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        match = re.search(r"listening on (ws://\S+)", line)
        if match:
            return match.group(1)
    raise AssertionError("server did not report its address")


@pytest.fixture
def served() -> Iterator[str]:
    """A worker started with the CLI, configured through an environment variable."""
    process = subprocess.Popen(
        [*WSSERVER, "serve", "--port", "0", "--answer-tokens", "25"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(WSSERVER_DECODE_RATE="400"),
    )
    try:
        yield _read_url(process)
    finally:
        process.terminate()
        process.wait(10)


def test_chat_one_shot_prints_the_answer_and_exits_zero(served: str) -> None:
    result = subprocess.run(
        [*WSSERVER, "chat", "--url", served, "hello there"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    answer, summary = result.stdout.strip().rsplit("\n", 1)
    assert len(answer.split()) == 25
    assert summary.startswith("[completed; tokens in ")
    assert "delivered 25" in summary


def test_chat_cannot_connect_exits_nonzero() -> None:
    result = subprocess.run(
        [*WSSERVER, "chat", "--url", "ws://127.0.0.1:9", "--open-timeout", "1", "hi"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert result.returncode == 1
    assert "cannot open a session" in result.stderr


def test_interactive_chat_enter_interrupts() -> None:
    server = subprocess.Popen(
        [*WSSERVER, "serve", "--port", "0", "--answer-tokens", "2000", "--decode-rate", "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
    )
    try:
        url = _read_url(server)
        chat = subprocess.Popen(
            [*WSSERVER, "chat", "--url", url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=_env(),
        )
        assert chat.stdin is not None and chat.stdout is not None
        assert chat.stdout.readline().startswith("session sess_")
        chat.stdin.write("tell me everything\n")
        chat.stdin.flush()
        # Wait until the answer streams, then press Enter.
        first = chat.stdout.read(20)
        assert first.strip()
        chat.stdin.write("\n")
        chat.stdin.flush()
        summary = ""
        for _ in range(50):
            summary = chat.stdout.readline()
            if summary.startswith("[") or not summary:
                break
        assert summary.startswith("[interrupted (client); tokens in ")
        assert "generated 2000" not in summary
        chat.stdin.close()  # Ctrl-D
        assert chat.wait(30) == 0
    finally:
        server.terminate()
        server.wait(10)


def test_chat_answers_tool_calls_from_its_demo_tools() -> None:
    worker = WorkerProcess("--decode-rate", "200", name="tools").start()
    try:
        result = subprocess.run(
            [*WSSERVER, "chat", "--url", worker.url, "--tools", "weather in Paris?"],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
    finally:
        worker.stop()
    assert result.returncode == 0, result.stderr
    assert '[tool call get_weather {"city": "Paris"}]' in result.stdout
    assert '"city": "Paris", "temperature_c"' in result.stdout
    assert "[completed;" in result.stdout


async def test_chat_sends_the_credentials_and_reports_a_refusal() -> None:
    async with running_stand_in() as stand_in:
        stand_in.plan = [(401, {})]
        code, output = await run_cli(
            "chat", "--url", stand_in.url, "--api-key", KEY, "--client-token", TOKEN, "hi"
        )
        assert code == 1
        assert "http 401" in output
        assert KEY not in output and TOKEN not in output
        (request,) = stand_in.requests
        assert request.headers["Authorization"] == f"Bearer {KEY}"
        assert request.headers["Sec-WebSocket-Protocol"].endswith(f"wsserver.token.{TOKEN}")


async def test_chat_takes_the_credentials_from_the_environment() -> None:
    async with running_stand_in() as stand_in:
        stand_in.plan = [(403, {})]
        code, output = await run_cli(
            "chat", "--url", stand_in.url, "hi", WSSERVER_API_KEY=KEY, WSSERVER_CLIENT_TOKEN=TOKEN
        )
        assert (code, "http 403" in output) == (1, True)
        (request,) = stand_in.requests
        assert request.headers["Authorization"] == f"Bearer {KEY}"
