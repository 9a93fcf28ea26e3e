"""How many processes ``--workers`` means: pure rules, no processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from wsserver.supervisor.count import cgroup_cpu_limit, usable_cores, worker_count
from wsserver.supervisor.errors import WorkerCountError
from wsserver.worker.settings import Settings

REDIS = "redis://127.0.0.1:6379/0"


def test_default_is_one_per_core_with_a_shared_store() -> None:
    assert worker_count(Settings(store=REDIS)) == usable_cores()


def test_default_is_one_with_the_memory_store() -> None:
    assert worker_count(Settings()) == 1


def test_an_unknown_store_is_left_to_one_process_to_report() -> None:
    assert worker_count(Settings(store="foo")) == 1


def test_more_than_one_with_the_memory_store_is_refused() -> None:
    with pytest.raises(WorkerCountError, match="--store redis://"):
        worker_count(Settings(workers=2))


def test_explicit_counts_and_the_demo() -> None:
    assert worker_count(Settings(workers=1)) == 1
    assert worker_count(Settings(workers=3, store=REDIS)) == 3
    assert worker_count(Settings(workers=3, store=REDIS), demo=True) == 1


@pytest.mark.parametrize(
    ("text", "limit"),
    [("200000 100000\n", 2), ("150000 100000\n", 2), ("max 100000\n", None), ("junk", None)],
)
def test_a_container_cpu_limit_caps_the_count(tmp_path: Path, text: str, limit: int | None) -> None:
    path = tmp_path / "cpu.max"
    path.write_text(text)
    assert cgroup_cpu_limit(path) == limit


def test_no_cgroup_file_means_no_limit(tmp_path: Path) -> None:
    assert cgroup_cpu_limit(tmp_path / "missing") is None
