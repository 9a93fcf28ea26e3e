"""How many worker processes ``--workers`` means, and when more than one is refused."""

from __future__ import annotations

import math
import os
from pathlib import Path

from wsserver.store.urls import REDIS_SCHEMES
from wsserver.supervisor.errors import WorkerCountError
from wsserver.worker.settings import Settings

SHARED_STORES = REDIS_SCHEMES
"""``--store`` values every process of a group reaches: every Redis the store selector
accepts, a Redis Cluster's ``redis+cluster://`` included."""

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
"""A container's CPU limit (cgroup v2: ``QUOTA PERIOD``, or ``max PERIOD``)."""


def usable_cores() -> int:
    """The cores this process may use: its CPU affinity, lowered to a container's CPU
    limit (a pod limited to 2 CPUs on a 64-core node sees 64 in its affinity)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    limit = cgroup_cpu_limit(CGROUP_CPU_MAX)
    if limit is not None:
        cores = min(cores, limit)
    return max(1, cores)


def cgroup_cpu_limit(path: Path) -> int | None:
    """Whole CPUs the cgroup quota allows, rounded up; None without a quota."""
    try:
        quota, period = path.read_text().split()[:2]
        return max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError, ZeroDivisionError):  # no file, "max", malformed
        return None


def shared_store(settings: Settings) -> bool:
    """Whether ``--store`` names a store every process can reach (not the memory one).

    An unknown store counts as unshared: one process then reports it.
    """
    return settings.store.startswith(SHARED_STORES)


def worker_count(settings: Settings, *, demo: bool = False) -> int:
    """The number of processes to run; raises :class:`WorkerCountError`.

    ``0`` (the default) is one per usable core with a shared store, else 1: the memory
    store lives in one process, and a session resumed on another would be unknown there.
    An explicit number above 1 with the memory store is refused rather than quietly
    lowered: the operator asked for something that would lose sessions.
    """
    if demo:
        return 1
    if settings.workers == 0:
        return usable_cores() if shared_store(settings) else 1
    if settings.workers > 1 and not shared_store(settings):
        raise WorkerCountError(
            f"--workers {settings.workers} needs a store the processes share: a session "
            "that reconnects to another process must be found there. Add --store "
            "redis://HOST:PORT/DB (or WSSERVER_STORE), or use --workers 1"
        )
    return settings.workers
