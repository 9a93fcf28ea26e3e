"""A server whose stdout reader leaves (``wsserver serve | head -1``) goes on serving."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.processes import WSSERVER, cli_env
from tests.redis_server import RedisServer
from wsserver.cli.console import ReaderSafeStream
from wsserver.client.session_client import SessionClient


def test_writes_after_the_reader_left_go_nowhere_and_raise_nothing() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w", buffering=1) as pipe:
        stream = ReaderSafeStream(pipe)
        # More than a pipe holds, line by line: the first write finds the reader gone.
        for number in range(10_000):
            print(f"line {number}", file=stream, flush=True)
        assert stream.reader_gone
        # Its descriptor now points at /dev/null, so the file's own last flush succeeds.
        assert Path(f"/proc/self/fd/{write_end}").resolve() == Path(os.devnull)


def test_a_full_disk_or_a_closed_terminal_is_given_up_like_a_closed_pipe() -> None:
    # /dev/full fails every write with ENOSPC (a closed terminal fails with EIO).
    with open("/dev/full", "w", buffering=1) as full:
        stream = ReaderSafeStream(full)
        print("banner", file=stream, flush=True)
        assert stream.reader_gone
        print("more", file=stream, flush=True)
        assert Path(f"/proc/self/fd/{full.fileno()}").resolve() == Path(os.devnull)


def test_a_stream_with_its_reader_keeps_writing_to_it(tmp_path: Path) -> None:
    path = tmp_path / "out"
    with path.open("w") as file:
        stream = ReaderSafeStream(file)
        print("one", file=stream)
        stream.flush()
        assert not stream.reader_gone
        assert stream.fileno() == file.fileno()
        assert not stream.isatty()
        assert stream.encoding == file.encoding
    assert path.read_text() == "one\n"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _ask(port: int) -> str:
    async def ask() -> str:
        async with SessionClient(f"ws://127.0.0.1:{port}") as client:
            return (await client.ask("hello")).text

    return asyncio.run(ask())


def _run_unread(tmp_path: Path, arguments: list[str], serving: Callable[[], bool]) -> str:
    """Run ``wsserver ARGUMENTS`` with its stdout's reader gone before the first line,
    until ``serving()`` holds, then SIGTERM it: it must end with 0. What it logged."""
    errors = (tmp_path / "stderr").open("w+")
    read_end, write_end = os.pipe()
    os.close(read_end)
    process = subprocess.Popen(
        [*WSSERVER, *arguments], stdout=write_end, stderr=errors, env=cli_env()
    )
    os.close(write_end)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, f"it ended: {process.returncode}"
            try:
                if serving():
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "it never served"
            time.sleep(0.2)
        # Its drain and stop lines meet the closed pipe too.
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    errors.seek(0)
    return errors.read()


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_outlives_the_reader_of_its_output(
    workers: int, redis_server: RedisServer, tmp_path: Path
) -> None:
    # The reader of its stdout is gone before the first line (the banner, the group's
    # "worker ready" lines): each print met a closed pipe and ended the command.
    port = _free_port()
    store = ["--store", redis_server.url] if workers > 1 else []
    command = ["serve", "--port", str(port), "--workers", str(workers), *store]
    logged = _run_unread(tmp_path, command, lambda: bool(_ask(port)))
    assert "Traceback" not in logged
    assert "BrokenPipeError" not in logged


def test_the_router_outlives_the_reader_of_its_output(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    port = _free_port()

    def answers() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as reply:
            return bool(reply.status == 200)

    command = ["router", "--port", str(port), "--store", redis_server.url]
    logged = _run_unread(tmp_path, command, answers)
    assert "Traceback" not in logged
