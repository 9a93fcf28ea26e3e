"""Heartbeats of a ``--workers 2`` group: a stopped worker is killed and replaced; a
stalled parent kills nobody."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator

import pytest

from tests.processes import eventually, run_serve
from tests.redis_server import RedisServer
from tests.wsserver.supervisor.group_processes import WorkerGroupProcess
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
