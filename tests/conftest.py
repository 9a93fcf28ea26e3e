from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llama_server import LlamaServerProcess
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
