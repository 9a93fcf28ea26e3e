"""Attacks on ``--workers``' count rules: every store URL a group can share counts as shared."""

from __future__ import annotations

import pytest

from wsserver.store.urls import REDIS_SCHEMES
from wsserver.supervisor.count import shared_store, usable_cores, worker_count
from wsserver.worker.settings import Settings

CLUSTER = "redis+cluster://127.0.0.1:7000,127.0.0.1:7001"


@pytest.mark.parametrize("scheme", REDIS_SCHEMES)
def test_every_redis_scheme_the_store_accepts_is_shared(scheme: str) -> None:
    assert shared_store(Settings(store=f"{scheme}127.0.0.1:7000"))


def test_a_redis_cluster_store_runs_a_group() -> None:
    assert worker_count(Settings(workers=2, store=CLUSTER)) == 2
    assert worker_count(Settings(store=CLUSTER)) == usable_cores()
    assert worker_count(Settings(workers=2, store="rediss+cluster://h:1")) == 2
