"""``--store-max-connections``: a burst of sessions on a worker, and its Redis connections."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.processes import WorkerProcess
from tests.wsserver.store.test_redis_client import connections_to, node_ports
from tests.wsserver.wire import RawClient


@pytest.fixture
def workers(redis_url: str) -> Iterator[tuple[WorkerProcess, WorkerProcess]]:
    """A worker without a limit and one limited to two connections, on one Redis."""
    common = ("--store", redis_url, "--answer-tokens", "5")
    unlimited = WorkerProcess(*common, "--store-max-connections", "0", name="unlimited")
    limited = WorkerProcess(*common, "--store-max-connections", "2", name="limited")
    try:
        yield unlimited.start(), limited.start()
    finally:
        unlimited.stop()
        limited.stop()


async def _burst(worker: WorkerProcess, sessions: int) -> None:
    """``sessions`` clients start at once, each asks an answer, and every answer ends."""

    async def one() -> str:
        client = await RawClient.connect(worker.url)
        await client.start()
        await client.send({"type": "response.create", "input": "hi"})
        done = await client.until("response.done")
        await client.close()
        return str(done["status"])

    assert await asyncio.gather(*(one() for _ in range(sessions))) == ["completed"] * sessions


def _store_connections(worker: WorkerProcess, redis_url: str) -> int:
    assert worker.process is not None
    # The registry's connection is one more, in its own pool.
    (count,) = connections_to(worker.process.pid, node_ports(redis_url))
    return count


async def test_a_burst_of_sessions_keeps_within_the_limit(
    workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    unlimited, limited = workers
    await _burst(unlimited, 40)
    await _burst(limited, 40)
    # The same burst opens more than two without a limit (the baseline); the limited
    # worker's store holds two at most, and its registry (one call a second) one.
    assert _store_connections(unlimited, redis_url) > 3
    assert 1 <= _store_connections(limited, redis_url) <= 3


def test_a_flood_of_readiness_probes_shares_one_ping(
    workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    """``/readyz`` needs no credentials: 150 probes at once get one ping between them,
    not a connection each."""
    _unlimited, limited = workers
    with ThreadPoolExecutor(max_workers=150) as pool:
        statuses = list(pool.map(lambda _: limited.get("/readyz")[0], range(150)))
    assert statuses == [200] * 150
    assert _store_connections(limited, redis_url) <= 3
