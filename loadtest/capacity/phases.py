"""The capacity phases of one round, each on a fresh worker (Redis store) that it stops.

- ``lifecycle``: the worker alone (baseline), N idle sessions (heartbeating), the same
  N detached (TCP aborted: held for resume), then all N resumed and closed;
- ``streaming``: S sessions streaming answers back to back at the token rate;
- ``voice``: V voice sessions (loadtest.voice's load: real-time audio in, audio out);
- ``router``: idle connections relayed by a fresh router, then the streaming load
  through it (router CPU per relayed frame).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from loadtest.capacity.config import CapacityConfig
from loadtest.capacity.lifecycle_client import lifecycle_client_main
from loadtest.capacity.probes import (
    RssSampler,
    commands_by_kind,
    counter_delta,
    cpu_window,
    pool_reader,
    redis_counters,
)
from loadtest.common.clients import ConnectPlan, idle_client_main
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
from loadtest.common.stream_load import measure_streaming, require_sessions
from loadtest.router.phases import ViaRouter, router_argv
from loadtest.voice.phase import measure_rung, start_voice_server

MIB = 2**20


@contextmanager
def fresh_worker(
    config: CapacityConfig, redis: RedisProcess, log_dir: Path, sessions: int, name: str
) -> Iterator[ServerProcess]:
    """One ``wsserver serve`` process on the (flushed) Redis store, stopped on leaving."""
    redis.flush()
    argv = worker_argv(
        decode_rate=config.token_rate,
        answer_tokens=config.answer_tokens,
        sessions=sessions,
        extra=[*config.worker_args, f"--store={redis.url}", f"--worker-id={name}"],
    )
    with ServerProcess.launch(name, argv, log_dir) as worker, tail_on_error(worker):
        yield worker


def _per(total: float, count: int, digits: int = 1) -> float | None:
    return round(total / count, digits) if count else None


def _redis_cost(delta: dict[str, float], count: int) -> dict[str, Any]:
    """Redis work per unit (a session start, a resume, a token)."""
    return {
        "commands": _per(delta.get("commands", 0.0), count, 3),
        "net_in_bytes": _per(delta.get("net_in_bytes", 0.0), count),
        "net_out_bytes": _per(delta.get("net_out_bytes", 0.0), count),
        "by_command": {k: _per(v, count, 3) for k, v in commands_by_kind(delta).items()},
        "redis_cpu_us": _per(1e6 * delta.get("cpu_s", 0.0), count),
    }


def _window(
    readers: dict[str, Callable[[], float]], redis: RedisProcess, duration_s: float
) -> dict[str, float]:
    """CPU shares in a window, and the Redis commands per second the worker sent in it."""
    before = redis_counters(redis)
    shares = cpu_window(readers, duration_s)
    delta = counter_delta(before, redis_counters(redis))
    # The probe's own INFO calls are not the worker's.
    shares["redis_commands_per_s"] = round(
        (delta.get("commands", 0.0) - delta.get("cmd_info", 0.0)) / shares["wall_s"], 2
    )
    return shares


def measure_lifecycle(config: CapacityConfig, redis: RedisProcess, log_dir: Path) -> dict[str, Any]:
    """Baseline, idle, detached and resumed sessions on one fresh worker."""
    n = config.idle_sessions
    with fresh_worker(config, redis, log_dir, n, "worker-lifecycle") as worker:
        rss_base = worker.settled_rss()
        redis_mem_base = redis_counters(redis)["used_memory_bytes"]
        readers = {"worker": worker.cpu_seconds, "redis": redis.cpu_seconds}
        baseline = _window(readers, redis, config.duration)
        plans = [
            ConnectPlan(worker.url, k, config.connect_concurrency) for k in split(n, config.clients)
        ]
        with ClientPool(lifecycle_client_main, plans) as pool:
            readers["clients"] = pool_reader(pool.pids())
            before, cpu_before = redis_counters(redis), worker.cpu_seconds()
            connected = pool.gather("connected", timeout_s=60 + n / 20)
            require_sessions(worker, connected)
            opened = sum(c["sessions"] for c in connected)
            start_cpu, start_redis = worker.cpu_seconds() - cpu_before, redis_counters(redis)
            rss_idle = worker.settled_rss()
            redis_mem_idle = start_redis["used_memory_bytes"]
            idle = _window(readers, redis, config.duration)
            pool.broadcast({"kind": "detach"})
            pool.gather("detached", timeout_s=60)
            time.sleep(1.0)  # the worker notices every reset
            rss_detached = worker.settled_rss()
            detached = _window(readers, redis, config.duration)
            resume_before, cpu_before = redis_counters(redis), worker.cpu_seconds()
            pool.broadcast({"kind": "resume"})
            resumed = pool.gather("resumed", timeout_s=60 + n / 20)
            resume_cpu, resume_after = worker.cpu_seconds() - cpu_before, redis_counters(redis)
            pool.broadcast({"kind": "close"})
            pool.gather("closed", timeout_s=60)
        worker.check_alive()
        warnings = log_warnings(worker)
    back = sum(r["sessions"] for r in resumed)
    delta_start = counter_delta(before, start_redis)
    return {
        "sessions_opened": opened,
        "connect_failures": merge_counts(c["failures"] for c in connected),
        "rss_base_mib": round(rss_base / MIB, 2),
        "rss_idle_mib": round(rss_idle / MIB, 2),
        "rss_detached_mib": round(rss_detached / MIB, 2),
        "rss_per_idle_session_kib": _per((rss_idle - rss_base) / 1024, opened, 2),
        # Relative to the worker before any session: heap the connections left behind
        # (not all of it returns to the system) is charged to the detached sessions.
        "rss_per_detached_session_kib": _per((rss_detached - rss_base) / 1024, opened, 2),
        "redis_memory_per_session_bytes": _per(redis_mem_idle - redis_mem_base, opened),
        # Connections the worker opened to Redis while the sessions started (its pool).
        "redis_connections_opened": delta_start.get("connections", 0.0),
        "cpu_baseline": baseline,
        "cpu_idle": idle,
        "cpu_detached": detached,
        "worker_cpu_per_idle_session_pct_of_core": _per(
            idle["worker_pct_of_core"] - baseline["worker_pct_of_core"], opened, 5
        ),
        "worker_cpu_per_detached_session_pct_of_core": _per(
            detached["worker_pct_of_core"] - baseline["worker_pct_of_core"], opened, 5
        ),
        "redis_commands_per_s_per_idle_session": _per(
            idle["redis_commands_per_s"] - baseline["redis_commands_per_s"], opened, 4
        ),
        "redis_commands_per_s_per_detached_session": _per(
            detached["redis_commands_per_s"] - baseline["redis_commands_per_s"], opened, 4
        ),
        "session_start": {
            "worker_cpu_us": _per(1e6 * start_cpu, opened),
            "redis": _redis_cost(delta_start, opened),
        },
        "resume": {
            "sessions_resumed": back,
            "failures": merge_counts(r["failures"] for r in resumed),
            "latency_ms": summarize([x for r in resumed for x in r["resume_ms"]]),
            "worker_cpu_us": _per(1e6 * resume_cpu, back),
            "redis": _redis_cost(counter_delta(resume_before, resume_after), back),
        },
        "worker_log_warnings": warnings,
    }


def _others(result: dict[str, Any], side_cpu_s: float, duration: float, cores: int) -> float:
    cpu = result["cpu"]
    ours = cpu["server_pct_of_core"] + cpu["clients_pct_of_core"] + 100 * side_cpu_s / duration
    return round(max(0.0, cpu["machine_busy_pct"] * cores - ours), 1)


def measure_stream(config: CapacityConfig, redis: RedisProcess, log_dir: Path) -> dict[str, Any]:
    """S sessions streaming at the token rate: worker CPU, RSS and Redis work per token."""
    load = config.streaming(config.streaming_sessions)
    with fresh_worker(config, redis, log_dir, load.sessions, "worker-stream") as worker:
        rss_base = worker.settled_rss()
        with RssSampler(worker) as sampler:
            result = measure_streaming(worker, load, probe=lambda: redis_counters(redis))
        warnings = log_warnings(worker)
    delta = result.pop("side_delta")
    result.pop("server_stats_before", None)
    result.pop("server_stats_after", None)
    tokens = round(result["tokens_per_s"] * load.duration)
    opened = result["sessions_opened"]
    result["cpu"]["redis_pct_of_core"] = round(100 * delta.get("cpu_s", 0.0) / load.duration, 1)
    result["cpu"]["others_pct_of_core"] = _others(
        result, delta.get("cpu_s", 0.0), load.duration, os.cpu_count() or 1
    )
    per_token = result["server_cpu_us_per_token"]
    result.update(
        {
            "rss_base_mib": round(rss_base / MIB, 2),
            "rss_peak_mib": round(sampler.peak_bytes / MIB, 2),
            "rss_per_streaming_session_kib": _per(
                (sampler.peak_bytes - rss_base) / 1024, opened, 1
            ),
            "worker_cpu_per_streaming_session_pct_of_core": _per(
                result["cpu"]["server_pct_of_core"], opened, 4
            ),
            "core_per_1000_tokens_per_s": round(per_token / 1000, 4) if per_token else None,
            "redis_per_token": _redis_cost(delta, tokens),
            "redis_memory_growth_bytes_per_token": _per(
                delta.get("used_memory_bytes", 0.0), tokens
            ),
            "worker_log_warnings": warnings,
        }
    )
    return result


def measure_voice(config: CapacityConfig, redis: RedisProcess, log_dir: Path) -> dict[str, Any]:
    """V voice sessions (real-time audio both ways): worker CPU and RSS per session."""
    redis.flush()
    voice = config.voice(redis.url)
    sessions = config.voice_sessions
    with start_voice_server("worker", voice, sessions, log_dir) as worker, tail_on_error(worker):
        rss_base = worker.settled_rss()
        before = redis_counters(redis)
        with RssSampler(worker) as sampler:
            result = measure_rung(worker, voice, sessions)
        delta = counter_delta(before, redis_counters(redis))
    result.pop("server_stats_after", None)
    opened = result["sessions_opened"]
    wall = voice.warmup + voice.duration
    result.update(
        {
            "rss_base_mib": round(rss_base / MIB, 2),
            "rss_peak_mib": round(sampler.peak_bytes / MIB, 2),
            "rss_per_voice_session_kib": _per((sampler.peak_bytes - rss_base) / 1024, opened, 1),
            # Over the whole rung (warm-up included): the store's share of a voice session.
            "redis_commands_per_session_s": _per(delta.get("commands", 0.0), opened * int(wall), 2),
            "redis_pct_of_core": round(100 * delta.get("cpu_s", 0.0) / wall, 1),
            # Mostly the replay log of its audio answers, bounded by --replay-max-bytes.
            "redis_memory_growth_per_session_bytes": _per(
                delta.get("used_memory_bytes", 0.0), opened
            ),
        }
    )
    return result


@contextmanager
def _router(redis: RedisProcess, log_dir: Path) -> Iterator[ServerProcess]:
    router = ServerProcess.launch("router", router_argv(redis.url, []), log_dir)
    with router, tail_on_error(router):
        deadline = time.monotonic() + 15.0
        while (router.stats() or {}).get("live_workers", 0) < 1:
            router.check_alive()
            if time.monotonic() > deadline:
                raise ServerFailed("the router saw no live worker within 15 s")
            time.sleep(0.1)
        yield router


def measure_router(config: CapacityConfig, redis: RedisProcess, log_dir: Path) -> dict[str, Any]:
    """Router RSS per relayed idle connection, then its CPU per relayed frame."""
    n = config.router_sessions
    load = config.streaming(config.streaming_sessions)
    with ExitStack() as stack:
        worker = stack.enter_context(
            fresh_worker(config, redis, log_dir, max(n, load.sessions), "worker-router")
        )
        router = stack.enter_context(_router(redis, log_dir))
        rss_base = router.settled_rss()
        plans = [
            ConnectPlan(router.url, k, config.connect_concurrency) for k in split(n, config.clients)
        ]
        with ClientPool(idle_client_main, plans) as pool:
            # From the client processes' start to "connected": the placements and the
            # handshakes (idle sessions send nothing else; the router's own list
            # refresh, once a second, is in the window too).
            router_before, worker_before = router.cpu_seconds(), worker.cpu_seconds()
            connected = pool.gather("connected", timeout_s=60 + n / 20)
            router_opening = router.cpu_seconds() - router_before
            worker_opening = worker.cpu_seconds() - worker_before
            require_sessions(router, connected)
            relayed = sum(c["sessions"] for c in connected)
            rss_relaying = router.settled_rss()
            pool.broadcast({"kind": "close"})
            pool.gather("closed", timeout_s=60)
        via = ViaRouter(worker, router)
        before = router.cpu_seconds()
        result = measure_streaming(
            via, load, probe=lambda: {"router_cpu_s": router.cpu_seconds(), **redis_counters(redis)}
        )
        total_router = router.cpu_seconds() - before
    delta = result.pop("side_delta")
    result.pop("server_stats_before", None)
    result.pop("server_stats_after", None)
    frames = result["frames_per_s"] * load.duration
    side = delta.get("router_cpu_s", 0.0) + delta.get("cpu_s", 0.0)
    result["cpu"]["router_pct_of_core"] = round(
        100 * delta.get("router_cpu_s", 0.0) / load.duration, 1
    )
    result["cpu"]["others_pct_of_core"] = _others(result, side, load.duration, os.cpu_count() or 1)
    result.update(
        {
            "relayed_connections": relayed,
            "router_rss_base_mib": round(rss_base / MIB, 2),
            "router_rss_relaying_mib": round(rss_relaying / MIB, 2),
            "router_rss_per_connection_kib": _per((rss_relaying - rss_base) / 1024, relayed, 2),
            "router_cpu_us_per_frame": _per(1e6 * delta.get("router_cpu_s", 0.0), int(frames), 1),
            # A new connection: placement (the lease read from Redis, rendezvous hashing),
            # the connection to the worker, the upgrade and session.ready relayed.
            "router_cpu_us_per_new_connection": _per(1e6 * router_opening, relayed),
            "worker_cpu_us_per_session_start_via_router": _per(1e6 * worker_opening, relayed),
            "router_cpu_s_whole_phase": round(total_router, 3),
        }
    )
    return result
