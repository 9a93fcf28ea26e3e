"""Store calls timed by operation, and counted as errors once Redis is gone (a real
redis-server of this module's own, killed halfway)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.processes import eventually
from tests.redis_server import RedisServer
from tests.wsserver.frontdoor.http import connect_as
from tests.wsserver.metrics.conftest import MeteredWorker, metered_worker
from tests.wsserver.metrics.scrape import scrape, value


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    yield server
    server.kill()


@pytest.fixture(scope="module")
def redis_worker(
    tmp_path_factory: pytest.TempPathFactory, redis: RedisServer
) -> Iterator[MeteredWorker]:
    yield from metered_worker(
        tmp_path_factory.mktemp("keys"),
        "--store", redis.url, "--store-flush-ms", "5", "--decode-rate", "400",
        name="stored",
    )  # fmt: skip


async def test_store_calls_are_timed_and_their_failures_counted(
    redis_worker: MeteredWorker, redis: RedisServer
) -> None:
    client = await connect_as(redis_worker.url, key=redis_worker.user_key)
    await client.start()
    await client.send({"type": "response.create", "input": "store me"})
    await client.until("response.done")
    # The admin listener: no key, and it needs no store.
    base = redis_worker.admin_base
    await eventually(
        lambda: value(scrape(base), "wsserver_store_call_seconds_count", operation="append") > 0
    )
    before = scrape(base)
    assert value(before, "wsserver_store_call_seconds_count", operation="create") >= 1
    assert value(before, "wsserver_store_errors_total") == 0
    redis.kill()
    await client.send({"type": "response.create", "input": "nowhere to store this"})
    await client.until("response.done")

    def failed() -> bool:
        errors = scrape(base)
        return value(errors, "wsserver_store_errors_total", kind="unavailable") > 0

    await eventually(failed)
    after = await asyncio.to_thread(scrape, base)
    assert value(after, "wsserver_store_errors_total", kind="other") == 0
    assert value(after, "wsserver_store_errors_total", operation="append", kind="unavailable") > 0
    await client.close()
