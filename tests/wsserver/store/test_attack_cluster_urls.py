"""Attacks on ``redis+cluster://`` URLs: refused when the store is chosen, not at each call."""

from __future__ import annotations

import pytest

from wsserver.store.base import StoreLimits, UnknownStore
from wsserver.store.selector import open_store


@pytest.mark.parametrize(
    "url",
    [
        "redis+cluster://127.0.0.1:99999",  # past the port range: a worker up, never connected
        "redis+cluster://127.0.0.1:0",
        "redis+cluster://127.0.0.1:7000,127.0.0.1:65536",
        "redis+cluster://127.0.0.1:\uff17\uff10\uff10\uff10",  # full-width digits: str.isdigit
        "redis+cluster://127.0.0.1:7000/5",  # a cluster has database 0 only: not 5 apart
    ],
)
def test_a_bad_cluster_url_is_refused_up_front(url: str) -> None:
    with pytest.raises(UnknownStore, match="bad redis cluster url"):
        open_store(url, StoreLimits())


def test_a_refused_cluster_url_never_shows_its_password() -> None:
    with pytest.raises(UnknownStore) as refused:
        open_store("redis+cluster://user:s3cret@127.0.0.1:99999", StoreLimits())
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    "url", ["redis+cluster://127.0.0.1:7000/", "redis+cluster://127.0.0.1:7000/0"]
)
async def test_database_zero_is_accepted(url: str) -> None:
    await open_store(url, StoreLimits()).close()
