from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llama_server import LlamaServerProcess
from tests.redis_cluster import LocalRedisCluster
from tests.redis_server import RedisServer


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One redis-server for the test session."""
    server = RedisServer()
    server.start()
    yield server
    server.kill()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """A clean database on the shared redis-server."""
    redis_server.flush()
    return redis_server.url


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServerProcess]:
    """One real llama.cpp server (SmolLM2, one thread, two slots) for the test session.

    It serves with the shipped tools-capable template (``--local-chat-template tools``).

    ``llama_server.base_url`` is the API root for the openai engine; ``slots()``,
    ``busy()``, ``wait_idle()`` and ``log()`` look inside it. Share it; don't kill it
    (start a :class:`LlamaServerProcess` of your own for that).
    """
    server = LlamaServerProcess(parallel=2).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[LocalRedisCluster]:
    """One three-primary Redis Cluster (a replica each) for the test session; don't kill
    its nodes (start a :class:`LocalRedisCluster` of your own for that)."""
    cluster = LocalRedisCluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture
def redis_cluster_url(redis_cluster: LocalRedisCluster) -> str:
    """An empty shared Redis Cluster: ``redis+cluster://`` with one seed node."""
    redis_cluster.flush()
    return redis_cluster.url


@pytest.fixture(params=["redis", "cluster"])
def any_redis_url(request: pytest.FixtureRequest) -> str:
    """A clean single Redis, then a clean Redis Cluster: a test runs on both."""
    return str(
        request.getfixturevalue("redis_url" if request.param == "redis" else "redis_cluster_url")
    )
