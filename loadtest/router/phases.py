"""The router benchmark's phases: the same load on a worker, reached directly or via the router.

Every phase starts from an empty Redis (``FLUSHALL``), a fresh worker and, for the
``router`` target, a fresh router, and stops them right after: each target is
measured from the same starting state (no sessions, store records, heap or
counters left over from the other target's phase) and alone on the machine.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from loadtest.common.clients import ConnectPlan
from loadtest.common.pool import ClientPool, split
from loadtest.common.redis_process import RedisProcess
from loadtest.common.report import merge_counts, summarize
from loadtest.common.servers import (
    ServerFailed,
    ServerProcess,
    log_warnings,
    tail_on_error,
    worker_argv,
)
from loadtest.common.stream_load import Snapshot, machine_busy_pct, measure_streaming
from loadtest.router.config import REGISTRY_INTERVAL_S, TARGETS, RouterBenchConfig
from loadtest.router.ping import PingPlan, ping_client_main

IDLE_WARMUP_S = 1.0


# -- processes -------------------------------------------------------------------


def start_worker(
    name: str, redis: RedisProcess, rate: float, config: RouterBenchConfig, log_dir: Path
) -> ServerProcess:
    """A fresh worker, flagged as loadtest.stream's, on the Redis store, in the registry."""
    argv = worker_argv(
        decode_rate=rate,
        answer_tokens=config.answer_tokens,
        sessions=config.sessions,
        extra=[
            *config.worker_args,
            f"--store={redis.url}",
            f"--registry-interval={REGISTRY_INTERVAL_S}",
            f"--worker-id={name}",
        ],
    )
    return ServerProcess.launch(name, argv, log_dir)


def router_argv(store_url: str, extra: list[str]) -> list[str]:
    """``wsserver router`` on a free loopback port, reading the workers from ``store_url``."""
    return [
        sys.executable,
        "-m",
        "wsserver.cli.main",
        "router",
        "--host=127.0.0.1",
        "--port=0",
        f"--store={store_url}",
        "--log-level=WARNING",
        *extra,
    ]


def start_router(
    redis: RedisProcess, worker_id: str, config: RouterBenchConfig, log_dir: Path
) -> ServerProcess:
    """A fresh router, returned once its worker list holds ``worker_id``'s worker."""
    router = ServerProcess.launch("router", router_argv(redis.url, config.router_args), log_dir)
    try:
        deadline = time.monotonic() + 15.0
        while time.monotonic() < deadline:
            stats = router.stats() or {}
            if stats.get("registry_up") and stats.get("live_workers", 0) >= 1:
                return router
            router.check_alive()
            time.sleep(0.1)
        raise ServerFailed(f"the router saw no live worker {worker_id!r} within 15 s: {stats}")
    except BaseException:
        router.stop()
        raise


class ViaRouter(ServerProcess):
    """The worker as the measurements see it, with its URL replaced by the router's.

    Clients connect to the router; CPU, ``/stats`` and liveness are the worker's
    (the router's liveness too). It starts and stops nothing itself.
    """

    def __init__(self, worker: ServerProcess, router: ServerProcess) -> None:
        super().__init__(worker.name, worker.argv, worker.log_path.parent)
        self.log_path = worker.log_path
        self._popen = worker._popen
        self._psutil = worker._psutil
        self.url = router.url
        self.worker = worker
        self.router = router

    def stats(self, timeout_s: float = 5.0) -> dict[str, Any] | None:
        """The worker's ``/stats``."""
        return self.worker.stats(timeout_s)

    def check_alive(self) -> None:
        """Raise when the worker or the router has exited."""
        self.worker.check_alive()
        self.router.check_alive()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Nothing: the worker and the router are stopped by their owner."""


@contextmanager
def target_servers(
    target: str, redis: RedisProcess, rate: float, config: RouterBenchConfig, log_dir: Path
) -> Iterator[tuple[ServerProcess, ServerProcess, ServerProcess | None]]:
    """(what the clients reach, the worker, the router or None), all stopped on leaving."""
    redis.flush()
    name = f"worker-{target}"
    with ExitStack() as stack:
        worker = stack.enter_context(start_worker(name, redis, rate, config, log_dir))
        router = None
        if target == "router":
            router = stack.enter_context(start_router(redis, name, config, log_dir))
        stack.enter_context(tail_on_error(*([worker, router] if router else [worker])))
        yield (ViaRouter(worker, router) if router else worker), worker, router


def side_probe(redis: RedisProcess, router: ServerProcess | None) -> Callable[[], dict[str, float]]:
    """CPU of redis-server and of the router (0 when there is none), Redis commands."""

    def probe() -> dict[str, float]:
        redis_now = redis.probe()
        return {
            "redis_cpu_s": redis_now["cpu_s"],
            "redis_commands": redis_now["commands"],
            "router_cpu_s": router.cpu_seconds() if router is not None else 0.0,
        }

    return probe


def _others_pct(cpu: dict[str, float], ours_pct: float) -> float:
    """What the rest of the machine (other users, the runner) took, in % of one core."""
    total = (cpu["machine_busy_pct"] - cpu["machine_softirq_pct"]) * (os.cpu_count() or 1)
    return round(max(0.0, total - ours_pct), 1)


# -- streaming ------------------------------------------------------------------------


def measure_stream_one(
    config: RouterBenchConfig, redis: RedisProcess, log_dir: Path, rate: float, target: str
) -> dict[str, Any]:
    """loadtest.stream's streaming load at ``rate`` on a fresh worker, reached via ``target``."""
    bench = config.at_rate(rate)
    print(f"[stream {rate:g} tokens/s per answer] {target} ...", flush=True)
    with target_servers(target, redis, rate, config, log_dir) as (server, worker, router):
        result = measure_streaming(server, bench, probe=side_probe(redis, router))
        result["router_stats"] = router.stats() if router is not None else None
    result["target"] = target
    duration = bench.duration
    side = result["side_delta"]
    tokens = result["tokens_per_s"] * duration
    frames = result["frames_per_s"] * duration
    router_cpu = side["router_cpu_s"]
    result["router"] = {
        "cpu_pct_of_core": round(100 * router_cpu / duration, 1),
        "cpu_us_per_token": round(router_cpu / tokens * 1e6, 2) if tokens else None,
        "cpu_us_per_delta_frame": round(router_cpu / frames * 1e6, 2) if frames else None,
        "log_warnings": log_warnings(router) if router is not None else None,
    }
    worker_us = result["server_cpu_us_per_token"]
    result["worker_plus_router_cpu_us_per_token"] = (
        round(worker_us + (result["router"]["cpu_us_per_token"] or 0.0), 1)
        if worker_us is not None
        else None
    )
    cpu = result["cpu"]
    cpu["router_pct_of_core"] = result["router"]["cpu_pct_of_core"]
    cpu["redis_pct_of_core"] = round(100 * side["redis_cpu_s"] / duration, 1)
    ours = (
        cpu["server_pct_of_core"]
        + cpu["clients_pct_of_core"]
        + cpu["router_pct_of_core"]
        + cpu["redis_pct_of_core"]
    )
    cpu["others_pct_of_core"] = _others_pct(cpu, ours)
    result["worker_log_warnings"] = log_warnings(worker)
    # The window's raw /stats of the worker are long; the report keeps what is read from them.
    result.pop("server_stats_before", None)
    result["worker_stats_after"] = result.pop("server_stats_after", None)
    return result


# -- idle round trips ---------------------------------------------------------------


def measure_idle_one(
    config: RouterBenchConfig, redis: RedisProcess, log_dir: Path, target: str
) -> dict[str, Any]:
    """``idle_sessions`` sessions that only ping, on a fresh worker reached via ``target``."""
    print(f"[idle pings] {target} ...", flush=True)
    with target_servers(target, redis, config.decode_rate, config, log_dir) as (
        server,
        worker,
        router,
    ):
        plans = [
            PingPlan(
                ConnectPlan(server.url, count, config.connect_concurrency),
                interval_s=config.idle_ping_interval,
                drain_s=5.0,
            )
            for count in split(config.idle_sessions, config.clients)
        ]
        probe = side_probe(redis, router)
        with ClientPool(ping_client_main, plans) as pool:
            connected = pool.gather("connected", timeout_s=60)
            if not any(c["sessions"] for c in connected):
                failures = merge_counts(c["failures"] for c in connected)
                raise RuntimeError(f"no session could be opened via {target}: {failures}")
            start = time.monotonic() + IDLE_WARMUP_S
            end = start + config.idle_duration
            pool.broadcast({"kind": "go", "start": start, "end": end})
            time.sleep(max(0.0, start - time.monotonic()))
            before = Snapshot.take(server, pool, probe)
            time.sleep(max(0.0, end - time.monotonic()))
            after = Snapshot.take(server, pool, probe)
            results = pool.gather("result", timeout_s=40)
        server.check_alive()
        router_stats = router.stats() if router is not None else None
    pings = [x for r in results for x in r["ping_ms"]]
    wall = after.at - before.at
    cpu = {
        "worker_pct_of_core": round(100 * (after.server_cpu - before.server_cpu) / wall, 1),
        "router_pct_of_core": round(
            100 * (after.side["router_cpu_s"] - before.side["router_cpu_s"]) / wall, 1
        ),
        "redis_pct_of_core": round(
            100 * (after.side["redis_cpu_s"] - before.side["redis_cpu_s"]) / wall, 1
        ),
        "clients_pct_of_core": round(100 * (after.clients_cpu - before.clients_cpu) / wall, 1),
        "machine_busy_pct": machine_busy_pct(before.machine, after.machine) or 0.0,
        "machine_softirq_pct": _softirq_pct(before.machine, after.machine),
    }
    ours = sum(v for k, v in cpu.items() if k.endswith("_pct_of_core"))
    cpu["others_pct_of_core"] = _others_pct(cpu, ours)
    return {
        "target": target,
        "sessions_opened": sum(c["sessions"] for c in connected),
        "connect_failures": merge_counts(c["failures"] for c in connected),
        "pings_per_s": round(len(pings) / config.idle_duration, 1),
        "ping_ms": summarize(pings),
        "unanswered_pings": sum(r["unanswered_pings"] for r in results),
        "dropped_sessions": sum(r["dropped_sessions"] for r in results),
        "cpu": cpu,
        "router_stats": router_stats,
        "worker_log_warnings": log_warnings(worker),
        "router_log_warnings": log_warnings(router) if router is not None else None,
    }


def _softirq_pct(before: Any, after: Any) -> float:
    total = sum(after) - sum(before)
    softirq = getattr(after, "softirq", 0.0) - getattr(before, "softirq", 0.0)
    return round(100 * softirq / total, 1) if total else 0.0


# -- rounds -------------------------------------------------------------------------


def measure_pair(
    config: RouterBenchConfig, measure_one: Callable[[str], dict[str, Any]]
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Each target ``config.rounds`` times, order alternating; each target's least disturbed.

    Rounds go direct, router, then router, direct, ... so a drift in what else the
    machine runs does not favour one target; the figures come from the round in
    which other processes used the least CPU. Every round is kept in brief.
    """
    runs: dict[str, list[dict[str, Any]]] = {target: [] for target in TARGETS}
    brief: list[dict[str, Any]] = []
    for index in range(config.rounds):
        for target in TARGETS if index % 2 == 0 else TARGETS[::-1]:
            result = measure_one(target)
            runs[target].append(result)
            brief.append(
                {
                    "round": index + 1,
                    "target": target,
                    "tokens_per_s": result.get("tokens_per_s"),
                    "ping_ms": result["ping_ms"],
                    "cpu": result["cpu"],
                }
            )
    chosen = {
        target: min(results, key=lambda r: r["cpu"]["others_pct_of_core"])
        for target, results in runs.items()
    }
    return chosen, brief
