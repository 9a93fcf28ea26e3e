"""The registry's value type: a worker's entry."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from wsserver.registry.base import WorkerInfo


def test_worker_info_round_trips_through_json() -> None:
    worker = WorkerInfo("w-1", "ws://10.0.0.7:8765", 100, 42, True, time.time())
    assert WorkerInfo.from_json(worker.to_json()) == worker
    assert worker.address == ("10.0.0.7", 8765)
    assert not worker.full and replace(worker, sessions=100).full
    assert not replace(worker, capacity=0, sessions=10**6).full, "0 means unlimited"
    with pytest.raises(ValueError, match="invalid worker info"):
        WorkerInfo.from_json('{"worker_id": "x"}')
