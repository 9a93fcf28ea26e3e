"""The reconnect storm's runner side: workers A and B on one Redis, views, the verdict."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import psutil

from loadtest.common.clients import ConnectPlan
from loadtest.common.pool import ClientPool, split
from loadtest.common.redis_process import RedisProcess
from loadtest.common.report import merge_counts, summarize
from loadtest.common.servers import ServerProcess, log_warnings, tail_on_error
from loadtest.common.stream_load import machine_busy_pct
from loadtest.store.config import StoreBenchConfig
from loadtest.store.phases import start_worker
from loadtest.store.storm_client import StormPlan, storm_client_main

# -- the reconnect storm ----------------------------------------------------------


def storm_plans(url_a: str, resume_url: str, config: StoreBenchConfig) -> list[StormPlan]:
    """One plan per client process."""
    return [
        StormPlan(
            connect=ConnectPlan(url_a, count, config.connect_concurrency),
            resume_url=resume_url,
            start_spread_s=min(1.0, config.storm_stream_s / 2),
            resume_attempts=config.resume_attempts,
            resume_timeout_s=config.resume_timeout_s,
        )
        for count in split(config.storm_sessions, config.clients)
    ]


class EngineSampler:
    """Polls a worker's ``/stats`` from a thread: when did its engine stop running?"""

    def __init__(self, server: ServerProcess, interval_s: float = 0.2) -> None:
        self.server = server
        self.interval_s = interval_s
        self.samples: list[tuple[float, int | None]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"sample-{server.name}")

    def __enter__(self) -> EngineSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            running = _engine(self.server.stats(timeout_s=2.0)).get("running")
            self.samples.append((time.monotonic(), running))

    def idle_after(self, moment: float) -> float | None:
        """Seconds from ``moment`` to the first sample with nothing running (None: never)."""
        for at, running in self.samples:
            if at >= moment and running == 0:
                return round(at - moment, 3)
        return None


def _engine(stats: dict[str, Any] | None) -> dict[str, Any]:
    return dict((stats or {}).get("engine") or {})


def _worker_view(server: ServerProcess) -> dict[str, Any]:
    stats = server.stats() or {}
    return {
        "sessions": stats.get("sessions"),
        "attached": stats.get("attached"),
        "engine_running": _engine(stats).get("running"),
        "tokens_generated": _engine(stats).get("tokens_generated"),
        "store": stats.get("store"),
    }


def listen_drops() -> dict[str, int]:
    """The kernel's counts of connections refused by full accept queues (Linux; else {})."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return {}
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:], strict=False))
            return {k: int(table[k]) for k in ("ListenOverflows", "ListenDrops") if k in table}
    return {}


def _views(workers: dict[str, ServerProcess], redis: RedisProcess) -> dict[str, Any]:
    views: dict[str, Any] = {name: _worker_view(w) for name, w in workers.items()}
    views["at"] = time.monotonic()
    views["redis"] = redis.probe()
    views["kernel"] = listen_drops()
    return views


def measure_storm(
    config: StoreBenchConfig, redis: RedisProcess, log_dir: Path, *, takeover: bool
) -> dict[str, Any]:
    """K sessions stream on A, all drop at once, all resume on B (takeover) or on A."""
    redis.flush()
    label = "takeover on B" if takeover else "same worker A"
    print(f"[storm] {config.storm_sessions} sessions, resume on {label} ...", flush=True)
    common: dict[str, Any] = {
        "decode_rate": config.storm_decode_rate,
        "config": config,
        "sessions": config.storm_sessions,
        "log_dir": log_dir,
    }
    with (
        start_worker("A", redis.url, **common) as a,
        start_worker("B", redis.url, **common) as b,
    ):
        workers = {"A": a, "B": b}
        target = b if takeover else a
        with (
            tail_on_error(a, b),
            ClientPool(storm_client_main, storm_plans(a.url, target.url, config)) as pool,
        ):
            summary = _drive_storm(config, pool, workers, redis)
        for w in workers.values():
            w.check_alive()
    summary["resume_on"] = "B" if takeover else "A"
    summary["worker_log_warnings"] = {name: log_warnings(w) for name, w in workers.items()}
    return summary


def _drive_storm(
    config: StoreBenchConfig,
    pool: ClientPool,
    workers: dict[str, ServerProcess],
    redis: RedisProcess,
) -> dict[str, Any]:
    connected = pool.gather("connected", timeout_s=60 + config.storm_sessions / 20)
    opened = sum(c["sessions"] for c in connected)
    if not opened:
        raise RuntimeError(f"no storm session could be opened: {connected}")
    start = time.monotonic() + 1.0
    drop_at = start + config.storm_stream_s
    end = drop_at + config.storm_after_s
    pool.broadcast({"kind": "go", "start": start, "drop_at": drop_at, "end": end})
    time.sleep(max(0.0, drop_at - 0.3 - time.monotonic()))
    at_drop = _views(workers, redis)
    machine_before = psutil.cpu_times()
    with EngineSampler(workers["A"]) as sampler_a:
        resumed = pool.gather("resumed", timeout_s=end - time.monotonic() + 30)
        all_resumed_at = max(r["at"] for r in resumed)
        after_resume = _views(workers, redis)
        results = pool.gather("result", timeout_s=end - time.monotonic() + 60)
        machine_after = psutil.cpu_times()
        time.sleep(1.0)  # a closed session is forgotten just after its closing handshake
        at_end = _views(workers, redis)
        # The old owner may hold sessions it has not yet learned it lost; watch it through
        # its next lease renewal, then see whether any ended session came back.
        time.sleep(config.lease_ttl / 3 + 1.0)
        at_last = _views(workers, redis)
        ended = [sid for r in results for sid in r.pop("ended_ids")]
        keys = {_meta_key(sid): sid for sid in ended}
        left = redis.existing(list(keys))
        examples = [
            {f: redis.command("HGET", key, f).split("\r\n")[-2] for f in ("owner", "epoch")}
            | {"key": key}
            for key in left[:3]
        ]
        pool.broadcast({"kind": "recheck", "ids": [keys[key] for key in left]})
        rechecked = pool.gather("rechecked", timeout_s=60)
    summary = _storm_summary(
        opened, connected, results, drop_at, all_resumed_at, [at_drop, after_resume, at_end]
    )
    summary["ended_sessions_in_store"] = len(left)
    summary["ended_sessions_resumable"] = sum(
        r["answers"].get("session.ready", 0) for r in rechecked
    )
    summary["ended_resume_answers"] = merge_counts([r["answers"] for r in rechecked])
    summary["ended_in_store_examples"] = examples
    summary["workers"]["A"]["after_renewal"] = at_last["A"]
    summary["machine_busy_pct"] = machine_busy_pct(machine_before, machine_after)
    summary["a_engine_idle_after_drop_s"] = sampler_a.idle_after(drop_at)
    summary["a_engine_idle_after_resumed_s"] = sampler_a.idle_after(all_resumed_at)
    return summary


_TOTALS = (
    "resumed",
    "events_before",
    "events_after",
    "replayed",
    "lost",
    "lost_at_resume",
    "doubled",
    "conflicting",
    "out_of_order",
    "sessions_with_loss",
    "sessions_with_doubles",
    "rewound_sessions",
    "rewound_chars",
    "streaming_after",
    "follow_up_created",
    "tokens_after",
    "lost_after_resume",
    "server_ahead",
)
"""Per-client counts of the storm that add up across client processes."""


def _meta_key(session_id: str) -> str:
    """The Redis store's record of a session (``wsserver/store/redis.py``)."""
    return "wss:{" + session_id + "}:meta"


def _sum(results: list[dict[str, Any]], key: str) -> int:
    return sum(int(r[key]) for r in results)


def _storm_summary(
    opened: int,
    connected: list[dict[str, Any]],
    results: list[dict[str, Any]],
    drop_at: float,
    all_resumed_at: float,
    views: list[dict[str, Any]],
) -> dict[str, Any]:
    at_drop, after_resume, at_end = views
    summary: dict[str, Any] = {"sessions_opened": opened}
    summary["connect_failures"] = merge_counts([c["failures"] for c in connected])
    summary.update({key: _sum(results, key) for key in _TOTALS})
    summary["drop_to_ready_ms"] = summarize([x for r in results for x in r["ready_ms"]])
    summary["all_resumed_after_s"] = round(all_resumed_at - drop_at, 3)
    summary["attempts"] = merge_counts([r["attempts"] for r in results])
    summary["refusals"] = merge_counts([r["refusals"] for r in results])
    summary["done_after"] = merge_counts([r["done_after"] for r in results])
    summary["examples"] = [e for r in results for e in r["examples"]][:5]
    summary["workers"] = {}
    for name in ("A", "B"):
        first, mid, last = (v[name] for v in (at_drop, after_resume, at_end))
        summary["workers"][name] = {
            "at_drop": first,
            "after_resume": mid,
            "at_end": last,
            "tokens_generated_drop_to_resumed": _delta(first, mid, "tokens_generated"),
            "tokens_generated_drop_to_end": _delta(first, last, "tokens_generated"),
            "tokens_generated_resumed_to_end": _delta(mid, last, "tokens_generated"),
            "store_round_trips_drop_to_resumed": _delta(
                first.get("store") or {}, mid.get("store") or {}, "round_trips"
            ),
        }
    summary["listen_overflows_drop_to_resumed"] = {
        key: value - at_drop["kernel"].get(key, 0) for key, value in after_resume["kernel"].items()
    }
    for key in ("commands", "connections", "cpu_s"):
        delta = after_resume["redis"][key] - at_drop["redis"][key]
        summary[f"redis_{key}_drop_to_resumed"] = round(delta, 3)
    return summary


def _delta(first: dict[str, Any], last: dict[str, Any], key: str) -> int | None:
    if first.get(key) is None or last.get(key) is None:
        return None
    return int(last[key]) - int(first[key])
