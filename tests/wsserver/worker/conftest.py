"""Fixtures of the worker tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.processes import WorkerProcess

# A refused resume leaves its connection open for a session.start until the handshake
# timeout: 2 s, well inside the tests' 10 s wait for that close.
FLAGS = (
    *("--decode-rate", "400", "--answer-tokens", "12", "--store-flush-ms", "5"),
    *("--drain-timeout", "0.5", "--handshake-timeout", "2"),
)


@pytest.fixture
def workers(redis_url: str) -> Iterator[tuple[WorkerProcess, WorkerProcess]]:
    """Workers A and B on one clean Redis: short answers, quick store writes."""
    a = WorkerProcess("--store", redis_url, *FLAGS, name="a").start()
    b = WorkerProcess("--store", redis_url, *FLAGS, name="b")
    try:
        b.start()
        yield a, b
    finally:
        a.stop()
        b.stop()
