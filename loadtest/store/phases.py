"""The store benchmark's streaming part: the same load on each store's worker."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from loadtest.common.redis_process import RedisProcess
from loadtest.common.servers import ServerProcess, log_warnings, tail_on_error, worker_argv
from loadtest.common.stream_load import measure_streaming
from loadtest.store.config import StoreBenchConfig

STORES = ("memory", "redis")
_COUNTERS = ("round_trips", "flushes", "events_written", "takeovers")


def start_worker(
    name: str,
    store_url: str,
    *,
    decode_rate: float,
    config: StoreBenchConfig,
    sessions: int,
    log_dir: Path,
) -> ServerProcess:
    """A fresh worker on the given store, paced like the streaming benchmark's."""
    argv = worker_argv(
        decode_rate=decode_rate,
        answer_tokens=config.answer_tokens,
        sessions=sessions,
        extra=[*config.worker_args, f"--store={store_url}", f"--worker-id={name}"],
    )
    return ServerProcess.launch(name, argv, log_dir)


# -- streaming: the same load on each store ----------------------------------------


def measure_stream_rounds(
    config: StoreBenchConfig, redis: RedisProcess, log_dir: Path, rate: float
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The streaming load at ``rate`` on each store, ``config.rounds`` times.

    Rounds alternate the order (memory, redis, then redis, memory, ...) so a
    drift in what else the machine runs does not favour one store. For each
    store the figures come from its least disturbed round: the one in which
    other processes used the least CPU. Every round is kept in brief.
    """
    runs: dict[str, list[dict[str, Any]]] = {store: [] for store in STORES}
    brief: list[dict[str, Any]] = []
    for index in range(config.rounds):
        order = STORES if index % 2 == 0 else STORES[::-1]
        for store in order:
            result = measure_stream_one(config, redis, log_dir, rate, store)
            runs[store].append(result)
            brief.append({"round": index + 1, "store": store, **_brief(result)})
    chosen = {
        store: min(results, key=lambda r: r["cpu"]["others_pct_of_core"])
        for store, results in runs.items()
    }
    return chosen, brief


def _brief(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "tokens_per_s": result["tokens_per_s"],
        "server_cpu_us_per_token": result["server_cpu_us_per_token"],
        "round_trips_per_token": result["store"].get("round_trips_per_token"),
        "interrupt_ms": result["interrupt_ms"],
        "ping_ms": result["ping_ms"],
        "cpu": result["cpu"],
    }


def measure_stream_one(
    config: StoreBenchConfig, redis: RedisProcess, log_dir: Path, rate: float, store: str
) -> dict[str, Any]:
    """The streaming load at ``rate`` on a fresh worker with ``store``."""
    url = redis.url if store == "redis" else "memory"
    bench = config.at_rate(rate, f"--store={url}")
    redis.flush()
    print(f"[stream {rate:g} tokens/s per answer] {store} store ...", flush=True)
    name = f"worker-{store}"
    with (
        start_worker(
            name, url, decode_rate=rate, config=config, sessions=bench.sessions, log_dir=log_dir
        ) as server,
        tail_on_error(server),
    ):
        # The Redis server's CPU is sampled in both cases: idle, it costs ~nothing.
        result = measure_streaming(server, bench, probe=redis.probe)
    result["store"] = _store_use(result, bench.duration)
    result["worker_log_warnings"] = log_warnings(server)
    cpu = result["cpu"]
    ours = cpu["server_pct_of_core"] + cpu["clients_pct_of_core"]
    ours += result["store"]["redis_cpu_pct_of_core"]
    total = (cpu["machine_busy_pct"] - cpu["machine_softirq_pct"]) * (os.cpu_count() or 1)
    # What the rest of the machine (other users, the runner) took in the window.
    cpu["others_pct_of_core"] = round(max(0.0, total - ours), 1)
    return result


def _store_use(result: dict[str, Any], duration: float) -> dict[str, Any]:
    """The store's work in the window, in total and per delivered token."""
    before = (result.get("server_stats_before") or {}).get("store") or {}
    after = (result.get("server_stats_after") or {}).get("store") or {}
    tokens = result["tokens_per_s"] * duration
    use: dict[str, Any] = {"kind": after.get("kind"), "up": after.get("up")}
    for key in _COUNTERS:
        if key in before and key in after:
            delta = after[key] - before[key]
            use[key] = delta
            use[f"{key}_per_token"] = round(delta / tokens, 5) if tokens else None
    side = result.get("side_delta") or {}
    if side:
        use["redis_cpu_pct_of_core"] = round(100 * side["cpu_s"] / duration, 1)
        use["redis_cpu_us_per_token"] = round(side["cpu_s"] / tokens * 1e6, 1) if tokens else None
        use["redis_commands"] = int(side["commands"])
        use["redis_commands_per_token"] = round(side["commands"] / tokens, 4) if tokens else None
    return use
