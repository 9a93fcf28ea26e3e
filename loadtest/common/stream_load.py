"""The streaming load, measured: tokens/s, interrupt and ping latency, CPU, and its warnings."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psutil

from loadtest.common.clients import ConnectPlan
from loadtest.common.config import StreamLoadConfig, expected_duty
from loadtest.common.pool import ClientPool, split
from loadtest.common.report import merge_counts, summarize
from loadtest.common.servers import ServerProcess
from loadtest.common.stream_client import StreamPlan, stream_client_main

# -- phase 1+2: streaming ---------------------------------------------------------


Probe = Callable[[], dict[str, float]]


@dataclass(slots=True)
class Snapshot:
    """CPU counters and server stats at one instant."""

    at: float
    server_cpu: float
    clients_cpu: float
    machine: Any
    stats: dict[str, Any] | None
    side: dict[str, float]
    """Counters of a process beside the server (the store's), from the caller's probe."""

    @classmethod
    def take(cls, server: ServerProcess, pool: ClientPool, probe: Probe | None = None) -> Snapshot:
        """Read everything now."""
        return cls(
            time.monotonic(),
            server.cpu_seconds(),
            pool.cpu_seconds(),
            psutil.cpu_times(),
            server.stats(),
            probe() if probe is not None else {},
        )


def require_sessions(server: ServerProcess, connected: list[dict[str, Any]]) -> None:
    """Stop the run when not a single session could be opened."""
    if not any(c["sessions"] for c in connected):
        failures = merge_counts(c["failures"] for c in connected)
        raise RuntimeError(f"no session could be opened on {server.name}: {failures}")


def _sleep_until(moment: float) -> None:
    time.sleep(max(0.0, moment - time.monotonic()))


def stream_plans(url: str, config: StreamLoadConfig) -> list[StreamPlan]:
    """One plan per client process; session indexes continue across processes."""
    plans, first = [], 0
    for count in split(config.sessions, config.clients):
        plans.append(
            StreamPlan(
                connect=ConnectPlan(url, count, config.connect_concurrency),
                first_index=first,
                interrupt_every=config.interrupt_every,
                interrupt_after=config.interrupt_after,
                interrupt_jitter_s=1.0 / config.decode_rate,
                start_spread_s=min(config.warmup, config.answer_tokens / config.decode_rate),
                ping_interval_s=config.ping_interval,
                drain_s=config.drain,
            )
        )
        first += count
    return plans


def measure_streaming(
    server: ServerProcess, config: StreamLoadConfig, probe: Probe | None = None
) -> dict[str, Any]:
    """Open N sessions, stream for warmup + duration, and sum what the clients saw.

    ``probe`` reads counters of another process (the store); their change over
    the window is reported as ``side_delta``.
    """
    with ClientPool(stream_client_main, stream_plans(server.url, config)) as pool:
        connected = pool.gather("connected", timeout_s=60 + config.sessions / 20)
        require_sessions(server, connected)
        start = time.monotonic() + config.warmup
        end = start + config.duration
        pool.broadcast({"kind": "go", "start": start, "end": end})
        _sleep_until(start)
        before = Snapshot.take(server, pool, probe)
        _sleep_until(end)
        after = Snapshot.take(server, pool, probe)
        results = pool.gather("result", timeout_s=config.drain + 60)
    server.check_alive()
    return _stream_summary(config, connected, results, before, after)


def _stream_summary(
    config: StreamLoadConfig,
    connected: list[dict[str, Any]],
    results: list[dict[str, Any]],
    before: Snapshot,
    after: Snapshot,
) -> dict[str, Any]:
    opened = sum(c["sessions"] for c in connected)
    tokens = sum(r["tokens"] for r in results)
    frames = sum(r["frames"] for r in results)
    return {
        "sessions_opened": opened,
        "connect_failures": merge_counts(c["failures"] for c in connected),
        "tokens_per_s": round(tokens / config.duration, 1),
        "frames_per_s": round(frames / config.duration, 1),
        "tokens_per_frame": round(tokens / frames, 3) if frames else None,
        "offered_tokens_per_s": round(opened * config.decode_rate, 1),
        "interrupt_ms": summarize([x for r in results for x in r["interrupt_ms"]]),
        "ping_ms": summarize([x for r in results for x in r["ping_ms"]]),
        "unanswered_interrupts": sum(r["unanswered_interrupts"] for r in results),
        "unanswered_pings": sum(r["unanswered_pings"] for r in results),
        "dropped_sessions": sum(r["dropped_sessions"] for r in results),
        "done_statuses": merge_counts(r["statuses"] for r in results),
        "errors": merge_counts(r["errors"] for r in results),
        "cpu": _cpu_use(before, after),
        "server_cpu_us_per_token": (
            round((after.server_cpu - before.server_cpu) / tokens * 1e6, 1) if tokens else None
        ),
        "decode_steps_per_s": _steps_per_s(before, after),
        "side_delta": {k: round(after.side[k] - v, 3) for k, v in before.side.items()},
        "server_stats_before": before.stats,
        "server_stats_after": after.stats,
    }


def _cpu_use(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """CPU use in the window, in percent of one core (machine: percent of all cores)."""
    wall = after.at - before.at
    total = sum(after.machine) - sum(before.machine)
    return {
        "server_pct_of_core": round(100 * (after.server_cpu - before.server_cpu) / wall, 1),
        "clients_pct_of_core": round(100 * (after.clients_cpu - before.clients_cpu) / wall, 1),
        "machine_busy_pct": machine_busy_pct(before.machine, after.machine) or 0.0,
        # Kernel work on interrupts (loopback networking among it), charged to no process.
        "machine_softirq_pct": round(100 * _softirq(after, before) / total, 1) if total else 0.0,
    }


def machine_busy_pct(before: Any, after: Any) -> float | None:
    """Percent of all cores busy between two ``psutil.cpu_times()`` (``None``: no time passed)."""
    total = sum(after) - sum(before)
    idle = after.idle - before.idle
    return round(100 * (total - idle) / total, 1) if total else None


def _softirq(after: Snapshot, before: Snapshot) -> float:
    return float(getattr(after.machine, "softirq", 0.0) - getattr(before.machine, "softirq", 0.0))


def _steps_per_s(before: Snapshot, after: Snapshot) -> float | None:
    def steps(stats: dict[str, Any] | None) -> int | None:
        if stats is None:
            return None
        engine = stats.get("engine", stats)
        value = engine.get("steps")
        return int(value) if value is not None else None

    first, last = steps(before.stats), steps(after.stats)
    if first is None or last is None:
        return None
    return round((last - first) / (after.at - before.at), 2)


# -- warnings -----------------------------------------------------------------------


def warnings_for(config: StreamLoadConfig, results: dict[str, dict[str, Any]]) -> list[str]:
    """Things that make a figure less trustworthy, in words."""
    notes: list[str] = []
    for phase, by_server in results.items():
        for name, r in by_server.items():
            wanted = config.sessions_in(phase)
            if r["sessions_opened"] < wanted:
                notes.append(
                    f"{phase}/{name}: opened {r['sessions_opened']} of {wanted} sessions "
                    f"{r['connect_failures']}"
                )
            if phase != "stream":
                continue
            asked = r["offered_tokens_per_s"] * expected_duty(config)
            if r["tokens_per_s"] < 0.9 * asked:
                notes.append(
                    f"stream/{name}: delivered {r['tokens_per_s']:,.0f} tokens/s, under 90% of "
                    f"what the sessions ask for (~{asked:,.0f}): the server is saturated"
                )
            if r["cpu"]["clients_pct_of_core"] >= 90 * config.clients:
                notes.append(f"stream/{name}: client processes were CPU-bound; figure is a floor")
            for key in ("unanswered_interrupts", "unanswered_pings", "dropped_sessions"):
                if r[key]:
                    notes.append(f"stream/{name}: {key} = {r[key]}")
            if r["errors"]:
                notes.append(f"stream/{name}: error events {r['errors']}")
    if (os.cpu_count() or 1) <= 2:
        notes.append(
            f"only {os.cpu_count()} CPU(s): servers, {config.clients} client process(es) and "
            "the runner share them, so both servers are measured with less than the machine"
        )
    return notes
