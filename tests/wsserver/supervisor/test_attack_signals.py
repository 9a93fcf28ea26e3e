"""Attacks on the group's signals: a SIGHUP that meets a worker being restarted."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator

import pytest

from tests.processes import eventually
from tests.redis_server import RedisServer
from tests.wsserver.supervisor.group_processes import WorkerGroupProcess, alive, children_of

FAST = ("--drain-timeout", "0.5", "--lease-ttl", "1", "--grace-period", "5")


@pytest.fixture
def group(redis_server: RedisServer) -> Iterator[WorkerGroupProcess]:
    process = WorkerGroupProcess("--store", redis_server.url, *FAST, name="hup").start()
    yield process
    process.stop()


def _count(group: WorkerGroupProcess, text: str) -> int:
    return sum(text in line for line in list(group.lines))


async def test_sighup_while_a_killed_worker_restarts_leaves_n_workers(
    group: WorkerGroupProcess,
) -> None:
    assert group.process is not None
    parent = group.process.pid
    pids = group.ready_workers()
    assert len(pids) == 2 and children_of(parent) == set(pids.values())
    # Worker 0 dies; before its replacement is up, a rolling restart is asked for. The
    # restart of the dead one and the roll both fill slot 0: one of them must give way.
    victim = group.worker_stats(0)["worker_id"]
    os.kill(pids[victim], signal.SIGKILL)
    group.signal(signal.SIGHUP)
    await eventually(lambda: _count(group, "rolling restart done") == 1, 40)
    await eventually(lambda: _count(group, "restarting it") == 1, 40)
    # Every start is over: the two original workers, two from the roll, one restart.
    await eventually(lambda: len(group.ready_workers()) == 5, 40)
    await eventually(lambda: len(children_of(parent)) == 2, 20)
    ids = {group.worker_stats(slot)["worker_id"] for slot in (0, 1)}
    assert ids <= set(group.ready_workers()) - set(pids), ids
    # Another roll replaces both again and still leaves two.
    group.signal(signal.SIGHUP)
    await eventually(lambda: _count(group, "rolling restart done") == 2, 40)
    await eventually(lambda: len(children_of(parent)) == 2, 20)
    assert group.process.poll() is None


async def test_a_sighup_storm_then_sigterm_mid_roll_drains_everything(
    group: WorkerGroupProcess,
) -> None:
    assert group.process is not None
    for _ in range(10):
        group.signal(signal.SIGHUP)
    # (the kernel coalesces signals not yet delivered: some may never arrive)
    await eventually(lambda: _count(group, "rolling restart of 2 workers") >= 1, 20)
    await eventually(lambda: len(group.ready_workers()) == 3, 40)  # the roll's first one
    group.signal(signal.SIGTERM)  # mid-roll: the roll stops, every live worker drains
    started = set(group.ready_workers().values())
    assert await asyncio.to_thread(group.process.wait, 40) == 0, "".join(group.lines)
    assert _count(group, "rolling restart of 2 workers") == 1, "one roll for the storm"
    assert _count(group, "rolling restart done") == 0
    await eventually(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in started), 10)


async def test_a_worker_that_keeps_dying_soon_after_ready_is_restarted_later_each_time(
    group: WorkerGroupProcess,
) -> None:
    # Each replacement of slot 0 is killed as soon as it is ready: a crash loop after
    # readiness backs off (0.2, 0.4, 0.8 s) instead of restarting every 0.2 s forever.
    seen: set[str] = set(group.ready_workers())
    for kills in range(1, 4):
        victim = group.worker_stats(0)["worker_id"]
        os.kill(group.ready_workers()[victim], signal.SIGKILL)
        await eventually(lambda k=kills: _count(group, "restarting it in") == k, 40)
        await eventually(lambda s=seen: len(set(group.ready_workers()) - s) == 1, 40)
        seen = set(group.ready_workers())
    delays = [
        float(line.rsplit(" in ", 1)[1].split()[0])
        for line in list(group.lines)
        if "restarting it in" in line
    ]
    assert delays == [0.2, 0.4, 0.8], delays


@pytest.mark.parametrize("after", [0.17, 0.19, 0.2, 0.21])
def test_sigterm_while_a_dead_worker_is_respawned_drains_every_worker(
    redis_server: RedisServer, after: float
) -> None:
    # A restart comes 0.2 s after the death: the SIGTERM lands around the spawn of the
    # replacement, which must be drained too (listed before it had a process, it got no
    # SIGTERM and held the drain, or its wait failed on the missing process).
    group = WorkerGroupProcess("--store", redis_server.url, *FAST, name="respawn").start()
    assert group.process is not None
    try:
        victim, pid = sorted(group.ready_workers().items())[0]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _count(group, f"worker {victim} exited with status 137; restarting it") == 0:
            assert time.monotonic() < deadline, group.lines
            time.sleep(0.002)
        time.sleep(after)
        group.signal(signal.SIGTERM)
        assert group.process.wait(30) == 0, group.lines
        assert not [line for line in group.lines if "Traceback" in line], group.lines
        for worker in group.ready_workers().values():
            assert not alive(worker)
    finally:
        if group.process.poll() is None:
            group.process.kill()  # it hung: the test has failed already
            group.process.wait(10)
        group.process = None
