"""Live-server fuzzing: malformed input over many connections while healthy sessions run.

``python -m loadtest.fuzz`` starts ``wsserver serve`` on a free loopback
port (memory store) — or targets ``--url`` — and sends ``--inputs`` malformed
inputs (default 100,000, bounded by ``--max-seconds``) over ``--lanes``
connections at once: invalid and truncated JSON and msgpack, deep nesting, lone
surrogates, invalid UTF-8, wrong types in every field of every message type,
unknown types, huge strings, msgpack bytes/ext/non-string keys, unknown tool
calls, bad audio frames, hostile schemas (remote and file ``$ref``, self
references, unbounded work), messages out of order, floods and broken framing.
Meanwhile ``--healthy`` SDK sessions ask for answers in a loop.

It reports crashes, tracebacks in the worker's log, closes without a
documented code, healthy answers completed vs started, worker RSS before and
after, and requests the schemas' trap server received, prints them and writes
a JSON report. Exit status 1 when a goal is missed. See ``loadtest/README.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil

from loadtest.common.config import BenchmarkConfig, add_report_flags, benchmark_parser, report_path
from loadtest.common.environment import environment
from loadtest.common.harness import _terminate_on_sigterm
from loadtest.common.redis_process import RedisProcess
from loadtest.common.report import write_json
from loadtest.common.servers import ServerProcess
from loadtest.fuzz.cases import FuzzContext
from loadtest.fuzz.fields import uncovered_fields
from loadtest.fuzz.healthy import (
    HealthTally,
    HealthyTally,
    StoreWriterTally,
    healthy_session,
    poll_health,
    watch_store_writer,
)
from loadtest.fuzz.lanes import CATEGORIES, FuzzPlan, run_lanes
from loadtest.fuzz.report import goals, print_summary, scan_log, totals
from loadtest.fuzz.trap import Trap


@dataclass(frozen=True, slots=True, kw_only=True)
class FuzzConfig(BenchmarkConfig):
    """Command-line settings of one run."""

    inputs: int = 100_000
    max_seconds: float = 170.0
    lanes: int = 50
    healthy: int = 10
    url: str = ""
    api_key: str | None = None
    worker_log: str = ""
    worker_pid: int = 0
    max_frame_bytes: int = 1 << 20
    settle_s: float = 5.0
    store: str = "memory"
    seed: int = 1


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    p = benchmark_parser("fuzz", __doc__)
    p.add_argument("--inputs", type=int, default=100_000, help="malformed inputs to send")
    p.add_argument(
        "--max-seconds", type=float, default=170.0, help="stop starting batches after this long"
    )
    p.add_argument("--lanes", type=int, default=50, help="fuzz connections at once")
    p.add_argument("--healthy", type=int, default=10, help="healthy SDK sessions")
    p.add_argument("--url", default="", help="fuzz this running worker or router instead")
    p.add_argument("--api-key", help="sent as 'Authorization: Bearer KEY' on every handshake")
    p.add_argument("--worker-log", default="", help="with --url: the worker's log to scan")
    p.add_argument("--worker-pid", type=int, default=0, help="with --url: the pid to read RSS of")
    p.add_argument(
        "--max-frame-bytes", type=int, default=1 << 20, help="the server's frame limit (--url)"
    )
    p.add_argument(
        "--store",
        choices=("memory", "redis"),
        default="memory",
        help="the worker's session store (redis: a redis-server is started for it)",
    )
    p.add_argument("--settle-s", type=float, default=5.0, help="wait before reading RSS after")
    p.add_argument("--seed", type=int, default=1, help="random seed of the cases")
    add_report_flags(p, "extra flag for wsserver serve, --FLAG=VALUE (repeatable)")
    return p


def resolve_config(args: argparse.Namespace) -> FuzzConfig:
    """Settings from parsed arguments, with the report path filled in."""
    return FuzzConfig(
        inputs=args.inputs,
        max_seconds=args.max_seconds,
        lanes=args.lanes,
        healthy=args.healthy,
        url=args.url,
        api_key=args.api_key,
        worker_log=args.worker_log,
        worker_pid=args.worker_pid,
        max_frame_bytes=args.max_frame_bytes,
        settle_s=args.settle_s,
        store=args.store,
        seed=args.seed,
        report=report_path(args, "fuzz"),
        worker_args=list(args.worker_arg),
    )


def worker_argv(extra: Sequence[str]) -> list[str]:
    """``wsserver serve`` with short, fast answers (many per second for the healthy check)."""
    return [
        sys.executable,
        "-m",
        "wsserver.cli.main",
        "serve",
        "--host=127.0.0.1",
        "--port=0",
        "--decode-rate=200",
        "--answer-tokens=10",
        # Every answer is bounded by its token budget: 1,000 at 200/s ends well within the
        # lanes' wait for a response (fuzz_lanes.DEFAULT_RESPONSE_WAIT_S), whatever the
        # schema asks for.
        "--max-output-tokens=1000",
        "--log-level=WARNING",
        # One process, whose RSS is read by pid (with --store redis the default is a group).
        "--workers=1",
        *extra,
    ]


def stable_rss(process: psutil.Process | None, max_wait_s: float = 6.0) -> int | None:
    """RSS once it moves less than 1% in half a second (or after ``max_wait_s``)."""
    if process is None:
        return None
    try:
        last = process.memory_info().rss
        deadline = time.monotonic() + max_wait_s
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = process.memory_info().rss
            if abs(now - last) < last * 0.01:
                return int(now)
            last = now
        return int(last)
    except psutil.Error:
        return None


async def _fuzz(
    config: FuzzConfig, url: str, process: psutil.Process | None, trap: Trap
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    stop = asyncio.Event()
    healthy, health = HealthyTally(), HealthTally()
    began = time.monotonic()
    writer = StoreWriterTally()
    poller = asyncio.create_task(poll_health(url, headers, stop, health, began))
    watcher = asyncio.create_task(watch_store_writer(url, headers, stop, writer, began))
    sessions = [
        asyncio.create_task(healthy_session(i, url, config.api_key, stop, healthy))
        for i in range(config.healthy)
    ]
    await asyncio.sleep(2.0)  # sessions open and answer a few times: the baseline heap
    rss_before = await asyncio.to_thread(stable_rss, process)
    context = FuzzContext(trap.url, str(trap.canary_path), config.max_frame_bytes)
    fuzz_began = time.monotonic()
    plan = FuzzPlan(
        url=url,
        inputs=config.inputs,
        lanes=config.lanes,
        deadline=fuzz_began + config.max_seconds,
        headers=headers,
        context=context,
        canaries=trap.canaries,
        seed=config.seed,
    )
    scheduler = await run_lanes(plan)
    fuzz_seconds = round(time.monotonic() - fuzz_began, 1)
    stop.set()
    await asyncio.wait(sessions, timeout=40.0)
    for task in [*sessions, poller, watcher]:
        task.cancel()
    await asyncio.gather(*sessions, poller, watcher, return_exceptions=True)
    await asyncio.sleep(config.settle_s)
    rss_after = await asyncio.to_thread(stable_rss, process)
    stats = await asyncio.to_thread(fetch_stats, url, headers)
    categories = {name: t.to_dict() for name, t in scheduler.tallies.items()}
    return {
        "fuzz_seconds": fuzz_seconds,
        "categories": categories,
        "totals": totals(categories),
        "healthy": healthy.to_dict(),
        "health": health.to_dict(),
        "store_writer": writer.to_dict(),
        "rss_before": rss_before,
        "rss_after": rss_after,
        "stats_after": stats,
    }


def fetch_stats(url: str, headers: dict[str, str]) -> dict[str, Any] | None:
    """Sessions and connections the worker still holds (``/stats``), or ``None``."""
    http_url = url.replace("ws://", "http://", 1).rstrip("/") + "/stats"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(http_url, headers=headers), timeout=5) as reply:
            body = json.loads(reply.read())
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict):
        return None
    keys = ("sessions", "attached", "connections", "outbox_peak_bytes_max")
    store = body.get("store")
    kind = store.get("kind") if isinstance(store, dict) else None
    return {**{k: body.get(k) for k in keys}, "store_kind": kind}


def _mib(value: int | None) -> float | None:
    return None if value is None else round(value / 2**20, 1)


def run(config: FuzzConfig, log_dir: Path) -> dict[str, Any]:
    """Start the worker (unless ``--url``), fuzz it, and gather what happened to it."""
    worker: ServerProcess | None = None
    log_path = Path(config.worker_log) if config.worker_log else None
    log_offset = log_path.stat().st_size if log_path is not None and log_path.exists() else 0
    with Trap(log_dir) as trap, contextlib.ExitStack() as stack:
        try:
            if config.url:
                url = config.url
                process = psutil.Process(config.worker_pid) if config.worker_pid else None
            else:
                extra = list(config.worker_args)
                if config.store == "redis":
                    redis = stack.enter_context(RedisProcess(log_dir))
                    extra.append(f"--store={redis.url}")
                worker = ServerProcess.launch("worker", worker_argv(extra), log_dir)
                url, process, log_path = worker.url, psutil.Process(worker.pid), worker.log_path
            results = asyncio.run(_fuzz(config, url, process, trap))
            returncode = None
            if worker is not None and worker._popen is not None:
                returncode = worker._popen.poll()
            crashed = returncode is not None or (process is not None and not process.is_running())
        finally:
            if worker is not None:
                worker.stop()
        results["trap"] = {"requests": trap.request_count, "paths": dict(trap.requests)}
        # A shared store (redis) is written all the time by the healthy sessions.
        kind = (results["stats_after"] or {}).get("store_kind")
        results["shared_store"] = config.store == "redis" or kind == "redis"
    log = None
    if log_path is not None and log_path.exists():
        with log_path.open("rb") as handle:
            handle.seek(log_offset)
            text = handle.read().decode(errors="replace")
        log = scan_log(text)
        kept = config.report.with_suffix(".worker.log")
        kept.parent.mkdir(parents=True, exist_ok=True)
        if worker is not None:
            shutil.copyfile(log_path, kept)
            log["kept_at"] = str(kept)
    before, after = results.pop("rss_before"), results.pop("rss_after")
    results["worker"] = {
        "url": url,
        "crashed": crashed,
        "returncode": returncode,
        "rss_before_mib": _mib(before),
        "rss_after_mib": _mib(after),
        "rss_ratio": round(after / before, 3) if before and after else None,
        "settle_s": config.settle_s,
        "stats_after": results.pop("stats_after"),
        "log": log,
    }
    return results


def warnings_for(config: FuzzConfig, results: dict[str, Any]) -> list[str]:
    """Notes on what this run could not measure or did not reach."""
    notes = []
    sent = results["totals"]["inputs"]
    if sent < config.inputs:
        notes.append(f"only {sent:,} of {config.inputs:,} inputs sent within --max-seconds")
    if results["worker"]["log"] is None:
        notes.append("no worker log to scan (--url without --worker-log): tracebacks not counted")
    if results["worker"]["rss_ratio"] is None:
        notes.append("no worker process to read RSS of (--url without --worker-pid)")
    if results["healthy"]["api_key_passed"] is False:
        notes.append("the SDK takes no api_key: healthy sessions connected without it")
    missing = uncovered_fields()
    if missing:
        notes.append(f"message fields no case breaks (add them to fuzz_fields): {missing}")
    stall = results["health"]["healthz_ms"]["max"]
    if stall is not None and stall > 500:
        notes.append(
            f"/healthz took up to {stall:,.0f} ms: the worker's event loop stalled"
            " (every session on it waited)"
        )
    refused = results["totals"]["connect_failures"]
    if refused:
        notes.append(f"connections refused or failed: {refused}")
    return notes


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    config = resolve_config(build_parser().parse_args(argv))
    _terminate_on_sigterm()
    started = datetime.now().isoformat(timespec="seconds")
    env = environment()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-fuzz-") as log_dir:
        results = run(config, Path(log_dir))
    report: dict[str, Any] = {
        "benchmark": "fuzz",
        "started_at": started,
        "elapsed_s": round(time.monotonic() - began, 1),
        "config": {**asdict(config), "report": str(config.report), "api_key": None},
        "categories": {name: share for name, (share, _) in CATEGORIES.items()},
        "environment": env,
        "results": results,
    }
    report["goals"] = goals(results)
    report["warnings"] = warnings_for(config, results)
    print_summary(report)
    write_json(config.report, report)
    print(f"\nreport: {config.report}")
    return 0 if all(met is not False for met in report["goals"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
