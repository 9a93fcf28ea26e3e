"""One measurement: the streaming load on a fresh ``wsserver serve --workers N``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psutil

from loadtest.common.processes import cpu_seconds
from loadtest.common.redis_process import RedisProcess
from loadtest.common.servers import ServerProcess, log_warnings, tail_on_error, worker_argv
from loadtest.common.stream_load import measure_streaming
from loadtest.workers.config import WorkersBenchConfig


class GroupServer(ServerProcess):
    """A server whose CPU is its own plus its worker processes' (the group's parent
    serves nothing; its children do)."""

    def cpu_seconds(self) -> float:
        """User plus system CPU of the process and every live descendant."""
        assert self._psutil is not None, f"{self.name} not started"
        total = cpu_seconds(self._psutil)
        for child in self._psutil.children(recursive=True):
            try:
                total += cpu_seconds(child)
            except psutil.NoSuchProcess:
                continue
        return total


def measure_one(
    config: WorkersBenchConfig, redis: RedisProcess, log_dir: Path, workers: int
) -> dict[str, Any]:
    """The streaming load on ``--workers workers`` with the Redis store."""
    redis.flush()
    print(
        f"[stream {config.decode_rate:g} tokens/s per answer] --workers {workers} ...", flush=True
    )
    argv = worker_argv(
        decode_rate=config.decode_rate,
        answer_tokens=config.answer_tokens,
        sessions=config.sessions,
        extra=[
            *config.worker_args,
            f"--store={redis.url}",
            f"--worker-id=w{workers}",
            f"--workers={workers}",  # after worker_argv's own --workers=1: the last one wins
        ],
    )
    server = GroupServer(f"workers-{workers}", argv, log_dir)
    with server, tail_on_error(server):
        result = measure_streaming(server, config, probe=redis.probe)
        result["processes"] = 1 + len(psutil.Process(server.pid).children(recursive=True))
    result["worker_log_warnings"] = log_warnings(server)
    cpu = result["cpu"]
    side = result.get("side_delta") or {}
    redis_pct = round(100 * side.get("cpu_s", 0.0) / config.duration, 1)
    cpu["redis_pct_of_core"] = redis_pct
    ours = cpu["server_pct_of_core"] + cpu["clients_pct_of_core"] + redis_pct
    total = (cpu["machine_busy_pct"] - cpu["machine_softirq_pct"]) * (os.cpu_count() or 1)
    # What the rest of the machine (other users, the runner) took in the window.
    cpu["others_pct_of_core"] = round(max(0.0, total - ours), 1)
    # /stats answers for one process of a group: not a figure here.
    result.pop("server_stats_before", None)
    result.pop("server_stats_after", None)
    return result


def measure_rounds(
    config: WorkersBenchConfig, redis: RedisProcess, log_dir: Path
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Each worker count ``config.rounds`` times, in alternating order; for each, the
    round in which other processes took the least CPU (the least disturbed)."""
    counts = (1, config.workers)
    runs: dict[str, list[dict[str, Any]]] = {str(n): [] for n in counts}
    brief: list[dict[str, Any]] = []
    for index in range(config.rounds):
        for workers in counts if index % 2 == 0 else counts[::-1]:
            result = measure_one(config, redis, log_dir, workers)
            runs[str(workers)].append(result)
            brief.append(
                {
                    "round": index + 1,
                    "workers": workers,
                    "tokens_per_s": result["tokens_per_s"],
                    "server_cpu_us_per_token": result["server_cpu_us_per_token"],
                    "cpu": result["cpu"],
                }
            )
    chosen = {n: min(rs, key=lambda r: r["cpu"]["others_pct_of_core"]) for n, rs in runs.items()}
    return chosen, brief
