"""Heartbeats of a ``--workers 2`` group: a stopped worker is killed and replaced; a
stalled parent kills nobody."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests.processes import WSSERVER, cli_env, eventually, run_serve
from tests.redis_server import RedisServer
from tests.wsserver.supervisor.group_processes import (
    READY,
    WorkerGroupProcess,
    alive,
    children_of,
)
from wsserver.client.session_client import SessionClient

TIMEOUT_S = 4.0
SILENT = "sent no heartbeat"


@pytest.fixture(scope="module")
def group(redis_server: RedisServer) -> Iterator[WorkerGroupProcess]:
    process = WorkerGroupProcess(
        "--store", redis_server.url, "--decode-rate", "200", "--answer-tokens", "20",
        "--drain-timeout", "0.5", "--worker-liveness-timeout", str(TIMEOUT_S),
        name="liveness",
    ).start()  # fmt: skip
    yield process
    process.stop()


def test_a_parent_stalled_past_the_timeout_kills_no_worker(group: WorkerGroupProcess) -> None:
    workers = group.ready_workers()
    assert group.process is not None
    group.signal(signal.SIGSTOP)
    try:
        time.sleep(TIMEOUT_S + 2)  # the beats pile up unread in the pipes
    finally:
        group.signal(signal.SIGCONT)
    time.sleep(3 * 1.0 + 0.5)  # three rounds of the parent's check
    assert not [line for line in group.lines if SILENT in line], group.lines
    assert group.ready_workers() == workers
    for pid in workers.values():
        os.kill(pid, 0)  # still running


async def test_a_stopped_worker_is_killed_and_replaced(group: WorkerGroupProcess) -> None:
    started = group.ready_workers()
    victim = group.worker_stats(1)["worker_id"]
    pid = started[victim]
    os.kill(pid, signal.SIGSTOP)  # its socket still takes connections; nothing answers
    await eventually(
        lambda: any(f"worker {victim} (pid {pid}) {SILENT}" in line for line in group.lines),
        timeout=TIMEOUT_S + 15,
    )
    await eventually(lambda: len(set(group.ready_workers()) - set(started)) == 1, timeout=30)
    assert any(f"worker {victim} exited with status 137" in line for line in group.lines)
    assert group.worker_stats(1)["worker_id"] != victim
    # The other one kept beating: only the stopped worker was killed.
    assert len([line for line in group.lines if SILENT in line]) == 1, group.lines
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # Every new connection is answered again (one in two went to the stopped worker).
    for _ in range(6):
        async with SessionClient(group.url) as client:
            result = await asyncio.wait_for(client.ask("still there?"), 20)
            assert result.status == "completed"


def test_a_timeout_shorter_than_three_heartbeats_is_refused() -> None:
    group = ("--workers", "2", "--store", "redis://127.0.0.1:1/0")
    result = run_serve("--port", "0", *group, "--worker-liveness-timeout", "1.5")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--worker-liveness-timeout 1.5 is shorter than three heartbeats" in result.stderr
    assert "listening on" not in result.stdout


def test_an_infinite_timeout_is_refused_before_any_worker_starts() -> None:
    group = ("--workers", "2", "--store", "redis://127.0.0.1:1/0")
    for flag, value in (("--worker-liveness-timeout", "inf"), ("--drain-timeout", "1e309")):
        result = run_serve("--port", "0", *group, flag, value)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "invalid settings" in result.stderr and "finite number" in result.stderr
        assert "worker" not in result.stdout  # none was started
        assert "Traceback" not in result.stderr


class StallableOutput:
    """A group's stdout on a pipe whose reader the test can stop, its buffer then full."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()
        self.lines: list[str] = []
        self._reading = threading.Event()
        self._reading.set()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        tail = b""
        while True:
            self._reading.wait()
            try:
                data = os.read(self.read_end, 1 << 16)
            except OSError:
                return
            if not data:
                return
            tail += data
            *whole, tail = tail.split(b"\n")
            self.lines.extend(line.decode(errors="replace") for line in whole)

    def stall(self) -> None:
        """Stop reading, and fill the pipe: the group's next write blocks."""
        self._reading.clear()
        # An end of our own, non-blocking (the group's end stays blocking, as a
        # terminal's or a log shipper's would be).
        filler = os.open(f"/proc/self/fd/{self.write_end}", os.O_WRONLY | os.O_NONBLOCK)
        try:
            # Whole chunks first, then ever smaller ones: a pipe with room for a line
            # of the group's is not full yet (each write is whole or nothing).
            for chunk in (b"filler\n" * 512, b"filler\n" * 8, b"\n"):
                full = 0
                while full < 20:  # the reader may take one read more before it stops
                    try:
                        os.write(filler, chunk)
                        full = 0
                    except BlockingIOError:
                        full += 1
                        time.sleep(0.01)
        finally:
            os.close(filler)

    def resume(self) -> None:
        self._reading.set()

    def close(self) -> None:
        self.resume()
        os.close(self.write_end)


def _wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _start_group(redis_url: str, output: StallableOutput) -> subprocess.Popen[bytes]:
    """A group of two on ``output``, once it listens."""
    group = subprocess.Popen(
        [
            *WSSERVER, "serve", "--port", "0", "--workers", "2", "--store", redis_url,
            "--drain-timeout", "0.5", "--worker-liveness-timeout", "3",
        ],
        stdout=output.write_end,
        stderr=subprocess.DEVNULL,
        env=cli_env(),
    )  # fmt: skip
    if not _wait_for(lambda: any("listening on" in line for line in output.lines), 30):
        group.kill()
        raise RuntimeError(f"the group did not start: {output.lines}")
    return group


def _stop_group(group: subprocess.Popen[bytes]) -> int | None:
    """SIGTERM, and the exit status; one that hangs is killed with its workers (None)."""
    workers = children_of(group.pid)
    group.terminate()
    try:
        return group.wait(30)
    except subprocess.TimeoutExpired:
        for pid in workers | children_of(group.pid) | {group.pid}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # stopped ones too: nothing is left behind
        group.wait(10)
        return None


def _ready_workers(lines: list[str]) -> dict[str, int]:
    return {m[1]: int(m[2]) for line in list(lines) if (m := READY.search(line))}


def test_a_stalled_output_reader_delays_no_kill_and_costs_no_healthy_worker(
    redis_server: RedisServer,
) -> None:
    output = StallableOutput()
    group = _start_group(redis_server.url, output)
    try:
        (victim, stopped), (_, healthy) = sorted(_ready_workers(output.lines).items())
        output.stall()
        os.kill(stopped, signal.SIGSTOP)
        # Killed while nothing reads the group's output: its loop never waits on it.
        assert _wait_for(lambda: not alive(stopped), 20), "the stopped worker was not killed"
        time.sleep(3 + 2)  # a liveness timeout and more: nobody else is silent
        output.resume()
        assert _wait_for(lambda: len(_ready_workers(output.lines)) == 3, 30), output.lines
        time.sleep(3 + 2)  # the reader is back: still nobody else is silent
        lines = list(output.lines)
        assert [line for line in lines if SILENT in line] == [
            f"worker {victim} (pid {stopped}) {SILENT} for 3 s (stopped or hung); killed it"
        ]
        assert alive(healthy)
        assert any(f"worker {victim} exited with status 137" in line for line in lines)
    finally:
        output.resume()
        code = _stop_group(group)
        output.close()
    assert code == 0


def test_a_replacement_stopped_while_it_starts_is_killed_and_the_roll_ends(
    redis_server: RedisServer,
) -> None:
    output = StallableOutput()
    group = _start_group(redis_server.url, output)
    try:
        serving = set(_ready_workers(output.lines).values())
        assert children_of(group.pid) == serving
        group.send_signal(signal.SIGHUP)
        replacement = 0

        def spawned() -> bool:
            nonlocal replacement
            new = children_of(group.pid) - serving
            if not new:
                return False
            replacement = new.pop()
            os.kill(replacement, signal.SIGSTOP)  # long before it can be ready
            return True

        assert _wait_for(spawned, 20), (output.lines, serving, children_of(group.pid))
        # Six timeouts of silence while it starts (18 s), then it is killed and the roll
        # gives up; the workers it was to replace go on serving.
        assert _wait_for(lambda: not alive(replacement), 18 + 20), output.lines
        assert _wait_for(
            lambda: any("rolling restart stopped: worker 0 did not start" in line
                        for line in output.lines), 10,
        ), output.lines  # fmt: skip
        lines = list(output.lines)
        assert any(f"(pid {replacement}) {SILENT} for 18 s" in line for line in lines), lines
        assert children_of(group.pid) == serving
        assert len(_ready_workers(lines)) == 2  # nothing else was started or killed
    finally:
        code = _stop_group(group)
        output.close()
    assert code == 0
