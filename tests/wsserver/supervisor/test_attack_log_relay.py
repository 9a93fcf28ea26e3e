"""Attacks on the group's log relay: a group whose stderr reader went away.

Before the relay, each worker wrote its logs to the group's stderr itself: with the
reader gone, a log write failed (EPIPE) inside the worker's logging, which reports
it and goes on. Now the parent writes every worker's logs: a failed write must not
end the relay (the worker would block once its pipe filled) nor the supervision.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import NamedTuple

from websockets.sync.client import connect as ws_connect
from websockets.typing import Subprotocol

from protocol.encoding import JSON_SUBPROTOCOL
from tests.processes import WSSERVER, cli_env, watch_output
from tests.redis_server import RedisServer
from wsserver.supervisor.log_relay import MAX_PARTIAL_LINE, READ_BYTES, relay_lines

FLOOD = """
import os
for n in range(400):
    os.write(1, b"x" * 1000 + b"\\n")  # 400 kB: far past a pipe's 64 KiB
"""


async def _relay_into_a_broken_pipe() -> int:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads the group's stderr any more: every write is EPIPE
    writer = await asyncio.create_subprocess_exec(
        sys.executable, "-c", FLOOD, stdout=asyncio.subprocess.PIPE
    )
    sink = os.fdopen(write_end, "w")
    try:
        assert writer.stdout is not None
        await relay_lines(writer.stdout, sink)
        # The relay read to the end: the writer never blocked on its full pipe.
        return await writer.wait()
    finally:
        with contextlib.suppress(OSError):  # its buffer cannot be flushed either
            sink.close()
        if writer.returncode is None:
            writer.kill()
            await writer.wait()


def test_a_sink_that_fails_does_not_end_the_relay() -> None:
    assert asyncio.run(_relay_into_a_broken_pipe()) == 0


class PipedGroup(NamedTuple):
    """A ``--workers 2`` group whose stderr is a pipe the test holds."""

    process: subprocess.Popen[str]
    stderr: int
    """The pipe's read end (the test reads it, closes it, or lets it fill)."""
    lines: list[str]
    """The group's stdout, line by line."""
    url: str
    seen: threading.Event
    """Set at the first stdout line containing the marker."""


def _start_piped_group(redis_server: RedisServer, *flags: str, marker: str) -> PipedGroup:
    read_end, write_end = os.pipe()
    command = [*WSSERVER, "serve", "--port", "0", "--workers", "2", "--store", redis_server.url]
    command += ["--admin-port", "0", "--drain-timeout", "0.5", "--log-level", "info", *flags]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=write_end, env=cli_env(), text=True
    )
    os.close(write_end)
    lines: list[str] = []
    seen = threading.Event()

    def on_line(line: str) -> None:
        lines.append(line)
        if marker in line:
            seen.set()

    ready, url = watch_output(process, r"wsserver listening on (ws://\S+) ", on_line)
    if not ready.wait(30):
        process.kill()
        os.close(read_end)
        raise AssertionError(f"the group did not start: {lines}")
    return PipedGroup(process, read_end, lines, url[0], seen)


def test_a_rolling_restart_finishes_after_the_stderr_reader_left(
    redis_server: RedisServer,
) -> None:
    process, read_end, lines, _, rolled = _start_piped_group(
        redis_server, marker="rolling restart done"
    )
    try:
        os.close(read_end)
        read_end = -1
        # Each old worker logs its drain: the first such line meets the broken stderr.
        process.send_signal(signal.SIGHUP)
        assert rolled.wait(40), lines
        process.terminate()
        assert process.wait(30) == 0, lines
    finally:
        if read_end >= 0:
            os.close(read_end)
        if process.poll() is None:
            process.kill()
            process.wait(10)


CUT_SHORT = """
import os
os.write(1, b'{"worker": "a", "message": "Traceback (most recent')
os.kill(os.getpid(), 9)  # killed mid-line: no newline ever comes
"""
WHOLE = """
import os
os.write(1, b'{"worker": "b", "message": "ready"}\\n')
"""


async def _relay_one_after_another(sink_path: Path) -> None:
    with sink_path.open("w") as sink:
        for script in (CUT_SHORT, WHOLE):
            writer = await asyncio.create_subprocess_exec(
                sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE
            )
            assert writer.stdout is not None
            await relay_lines(writer.stdout, sink)
            await writer.wait()


def test_a_worker_killed_mid_line_does_not_splice_the_next_workers_line(
    tmp_path: Path,
) -> None:
    sink_path = tmp_path / "stderr"
    asyncio.run(_relay_one_after_another(sink_path))
    lines = sink_path.read_text().splitlines()
    assert lines[0] == '{"worker": "a", "message": "Traceback (most recent', lines
    assert json.loads(lines[1]) == {"worker": "b", "message": "ready"}, lines


ENDLESS_LINE = """
import os
for _ in range(128):
    os.write(1, b"y" * 65536)  # 8 MiB and never a newline
"""


class WriteSizes:
    """A stderr that keeps only the size of each write (the relay's memory bound)."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def write(self, text: str, /) -> int:
        self.sizes.append(len(text))
        return len(text)

    def flush(self) -> None:
        """Nothing buffered."""


async def _relay_endless_line(sink: WriteSizes) -> int:
    writer = await asyncio.create_subprocess_exec(
        sys.executable, "-c", ENDLESS_LINE, stdout=asyncio.subprocess.PIPE
    )
    assert writer.stdout is not None
    await relay_lines(writer.stdout, sink)
    return await writer.wait()


def test_a_line_that_never_ends_is_written_on_in_bounded_pieces() -> None:
    sink = WriteSizes()
    assert asyncio.run(_relay_endless_line(sink)) == 0
    assert sum(sink.sizes) == 128 * 65536 + 1  # all of it, and the newline that ends it
    assert len(sink.sizes) > 1
    assert max(sink.sizes) <= MAX_PARTIAL_LINE + READ_BYTES


def _answers_until_stuck(url: str, stop: threading.Event) -> int:
    """Ask for short answers until one does not come (its worker is stuck logging) or
    ``stop`` is set; how many came."""
    answered = 0
    with ws_connect(url, subprotocols=[Subprotocol(JSON_SUBPROTOCOL)]) as ws:
        ws.send(json.dumps({"type": "session.start"}))
        while not stop.is_set():
            ws.send(json.dumps({"type": "response.create", "input": "log this"}))
            try:
                while json.loads(ws.recv(timeout=5))["type"] != "response.done":
                    pass
            except TimeoutError:
                return answered
            answered += 1
            assert answered < 20_000, "the worker never blocked: nothing fills its stderr?"
    return answered


def _responses_until_stuck(url: str, sessions: int = 32) -> int:
    """Short answers on ``sessions`` sessions at once (each answer waits out the simulated
    prefill: one session alone takes ~30 s to fill the pipes) until one stops coming."""
    stop = threading.Event()
    with concurrent.futures.ThreadPoolExecutor(sessions) as pool:
        asking = [pool.submit(_answers_until_stuck, url, stop) for _ in range(sessions)]
        concurrent.futures.wait(asking, return_when=concurrent.futures.FIRST_COMPLETED)
        stop.set()
        return sum(future.result() for future in asking)


def test_a_stalled_stderr_reader_leaves_the_group_supervising(
    redis_server: RedisServer,
) -> None:
    """Each answer logs a line; nobody reads the group's stderr (a log shipper that
    stalled). The worker that logs blocks once the pipes are full, as it did writing
    stderr itself; the group must still restart a worker that dies meanwhile."""
    flags = ["--answer-tokens", "1", "--decode-rate", "100000", "--prefill-per-token-ms", "0"]
    flags += ["--max-messages-per-second", "100000", "--max-message-burst", "100000"]
    flags += ["--message-burst-per-principal", "0"]
    # A worker blocked on its log is silent too, and the liveness check would kill it
    # first (tests/wsserver/supervisor/test_liveness.py): this test is about the relay.
    flags += ["--worker-liveness-timeout", "0"]
    process, read_end, lines, url, restarted = _start_piped_group(
        redis_server, *flags, marker="exited with status 137; restarting"
    )
    try:
        assert _responses_until_stuck(url) > 0
        pids = [int(m[1]) for line in list(lines) if (m := re.search(r"ready \(pid (\d+)\)", line))]
        os.kill(pids[0], signal.SIGKILL)
        assert restarted.wait(30), lines
    finally:

        def drain() -> None:
            while os.read(read_end, 1 << 16):
                pass

        drained = threading.Thread(target=drain, daemon=True)
        drained.start()
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        drained.join(10)
        os.close(read_end)
