"""Attacks on what a group prints: a store password given in the URL's query."""

from __future__ import annotations

import pytest

from tests.redis_server import RedisServer
from tests.wsserver.supervisor.group_processes import WorkerGroupProcess
from wsserver.store.urls import printable_store_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://127.0.0.1:6379/0?password=s3cret", "redis://127.0.0.1:6379/0"),
        ("redis+cluster://u:s3cret@h:1,h:2", "redis+cluster://h:1,h:2"),
        ("unix:///run/redis.sock?password=s3cret&db=1", "unix:///run/redis.sock"),
        ("memory", "memory"),
    ],
)
def test_a_printed_store_url_has_no_credentials(url: str, shown: str) -> None:
    assert printable_store_url(url) == shown


def test_the_group_banner_never_shows_a_query_password(redis_server: RedisServer) -> None:
    # redis-py takes ?password= from the query: the banner printed it after the host.
    group = WorkerGroupProcess("--store", redis_server.url + "?password=s3cret", name="pw")
    group.start()
    try:
        banner = [line for line in group.lines if "wsserver listening on" in line]
        assert banner and "store: redis://" in banner[0], group.lines
    finally:
        group.stop()
    assert not [line for line in group.lines if "s3cret" in line], group.lines
