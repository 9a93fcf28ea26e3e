"""The ``wsserver`` command as a user runs it: real subprocesses."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import WSSERVER
from tests.processes import cli_env as _env
from wsserver.frontdoor.api_keys import key_line


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


@pytest.mark.parametrize(
    "command",
    [[], ["serve"], ["chat"], ["router"], ["usage"], ["keys"], ["keys", "new"], ["keys", "hash"]],
)
def test_help(command: list[str]) -> None:
    result = subprocess.run(
        [*WSSERVER, *command, "--help"], capture_output=True, text=True, env=_env(), timeout=30
    )
    assert result.returncode == 0
    assert "usage: wsserver" in result.stdout


def test_keys_new_appends_a_hashed_line_and_prints_the_key_once(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    result = subprocess.run(
        [*WSSERVER, "keys", "new", "--principal", "alice", "--keys-file", str(keys_file)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    key = result.stdout.strip()
    assert key.startswith("wsk_")
    line = keys_file.read_text()
    assert key not in line
    assert line == key_line("alice", key) + "\n"
    assert keys_file.stat().st_mode & 0o077 == 0  # readable by its owner only
    hashed = subprocess.run(
        [*WSSERVER, "keys", "hash", "--principal", "alice", "--admin"],
        input=key + "\n",
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert hashed.stdout.strip() == key_line("alice", key, admin=True)


@pytest.mark.parametrize("command", ["serve", "router"])
def test_listening_beyond_loopback_without_credentials_is_refused(command: str) -> None:
    result = subprocess.run(
        [*WSSERVER, command, "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert result.returncode == 2
    assert "no credentials configured" in result.stderr
    assert "--auth none" in result.stderr


def test_serve_rejects_invalid_settings() -> None:
    result = subprocess.run(
        [*WSSERVER, "serve", "--decode-rate", "-3"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert result.returncode == 2
    assert "decode_rate" in result.stderr


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
