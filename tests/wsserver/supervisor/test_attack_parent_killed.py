"""Attacks on the group's parent: killed with SIGKILL, its workers must still drain.

Their stdout is a pipe to the dead parent: the drain's first line there raised
BrokenPipeError, so each worker died with a traceback instead of draining (its
clients saw the TCP end, not 1012 and a hint to go elsewhere).
"""

from __future__ import annotations

import os
import signal

from tests.processes import eventually
from tests.redis_server import RedisServer
from tests.wsserver.supervisor.group_processes import WorkerGroupProcess
from wsserver.client.session_client import Backoff, SessionClient


async def test_a_killed_parent_leaves_workers_that_drain(redis_server: RedisServer) -> None:
    group = WorkerGroupProcess("--store", redis_server.url, "--drain-timeout", "1", name="orphan")
    group.start()
    client = SessionClient(group.url, backoff=Backoff(base=0.05))
    try:
        await client.open()
        assert group.process is not None
        workers = set(group.ready_workers().values())
        os.kill(group.process.pid, signal.SIGKILL)
        await eventually(lambda: 1012 in client.close_codes, 20)
        await eventually(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in workers), 20)
    finally:
        client.reconnect = False
        await client.close()
        group.stop()
    output = "".join(group.lines)
    assert "Traceback" not in output and "BrokenPipeError" not in output, output[-3000:]
