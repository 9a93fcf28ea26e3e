"""One storm on one fresh worker: N sessions start at once, drop, and resume at once.

The worker (``--store-max-connections`` LIMIT, or 0 for none) runs on the shared
``redis-server``; the lifecycle client processes of :mod:`loadtest.capacity` open the
sessions, abort their TCP connections (a network drop) and resume them all. Between
the steps the benchmark counts the worker process's TCP connections to Redis (its pools keep
them open, so the count after a step is the most that step had; the registry's one
connection is among them).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psutil

from loadtest.capacity.lifecycle_client import lifecycle_client_main
from loadtest.common.clients import ConnectPlan
from loadtest.common.pool import ClientPool, split
from loadtest.common.redis_process import RedisProcess
from loadtest.common.report import merge_counts, summarize
from loadtest.common.servers import ServerProcess, log_warnings, tail_on_error, worker_argv
from loadtest.store_pool.config import StorePoolConfig


def redis_connections(redis: RedisProcess, worker: ServerProcess) -> int:
    """The worker's established connections to Redis now."""
    return sum(
        1
        for c in psutil.Process(worker.pid).net_connections(kind="tcp")
        if c.raddr and c.raddr.port == redis.port and c.status == psutil.CONN_ESTABLISHED
    )


def measure_storm(
    config: StorePoolConfig, redis: RedisProcess, log_dir: Path, limit: int, name: str
) -> dict[str, Any]:
    """Start, drop and resume ``config.sessions`` on a fresh worker limited to ``limit``."""
    redis.flush()
    n = config.sessions
    argv = worker_argv(
        decode_rate=20.0,
        answer_tokens=5,
        sessions=n,
        extra=[
            *config.worker_args,
            f"--store={redis.url}",
            f"--worker-id={name}",
            f"--store-max-connections={limit}",
        ],
    )
    with ServerProcess.launch(name, argv, log_dir) as worker, tail_on_error(worker):
        plans = [ConnectPlan(worker.url, k, config.concurrency) for k in split(n, config.clients)]
        with ClientPool(lifecycle_client_main, plans) as pool:
            began = time.monotonic()
            connected = pool.gather("connected", timeout_s=60 + n / 20)
            start_s = time.monotonic() - began
            after_start = redis_connections(redis, worker)
            pool.broadcast({"kind": "detach"})
            pool.gather("detached", timeout_s=60)
            time.sleep(1.0)  # the worker notices every reset
            began = time.monotonic()
            pool.broadcast({"kind": "resume"})
            resumed = pool.gather("resumed", timeout_s=60 + n / 20)
            resume_s = time.monotonic() - began
            after_resume = redis_connections(redis, worker)
            pool.broadcast({"kind": "close"})
            pool.gather("closed", timeout_s=60)
        worker.check_alive()
        warnings = log_warnings(worker)
    opened = sum(c["sessions"] for c in connected)
    back = sum(r["sessions"] for r in resumed)
    return {
        "limit": limit,
        "sessions_opened": opened,
        "start_failures": merge_counts(c["failures"] for c in connected),
        "starts_per_s": round(opened / start_s, 1) if start_s else None,
        "store_connections_after_starts": after_start,
        "sessions_resumed": back,
        "resume_failures": merge_counts(r["failures"] for r in resumed),
        "resumes_per_s": round(back / resume_s, 1) if resume_s else None,
        "resume_ms": summarize([x for r in resumed for x in r["resume_ms"]]),
        "store_connections_after_resumes": after_resume,
        "worker_log_warnings": warnings,
    }


def measure_rounds(
    config: StorePoolConfig, redis: RedisProcess, log_dir: Path
) -> dict[str, list[dict[str, Any]]]:
    """Both limits each round, the order alternating (the first of a round is not favoured)."""
    results: dict[str, list[dict[str, Any]]] = {"unlimited": [], "limited": []}
    for round_ in range(config.rounds):
        order = [("unlimited", 0), ("limited", config.limit)]
        if round_ % 2:
            order.reverse()
        for key, limit in order:
            results[key].append(measure_storm(config, redis, log_dir, limit, f"{key}-{round_}"))
    return results
