"""``python -m loadtest.router --storm``: a reconnect storm through the router, beside direct.

Per target (the worker reached directly, then through ``wsserver router``), a fresh
worker on the Redis store and, for the router, a fresh router in front of it; then
``loadtest``'s ``reconnect-storm`` scenario: every session streams, at ``--drop-at``
x ``--duration`` every client aborts its TCP connection at one instant, and all
resume at once through the same URL (the router places each on its owner). The
figures are cut -> ``session.ready`` p50/p99 with the direct storm as the same-run
baseline, and the correctness counts: events lost and doubled across the resume,
sessions not resumed (all must be 0).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from loadtest.command.options import Settings
from loadtest.command.runner import Outcome, drive
from loadtest.common.redis_process import RedisProcess
from loadtest.common.report import Figure, format_table
from loadtest.router.config import TARGETS, RouterBenchConfig
from loadtest.router.phases import target_servers

CORRECTNESS = ("lost_events", "doubled_events")


def storm_settings(config: RouterBenchConfig, url: str) -> Settings:
    """The session scenario's settings for one storm against ``url``."""
    settings = Settings(
        sessions=config.sessions,
        duration=config.duration,
        # Long enough for the answer running at the end to finish (else the bound cuts it).
        drain=max(config.drain, config.answer_tokens / config.decode_rate + 10.0),
        ramp=config.warmup,
        rate=config.decode_rate,
        answer_tokens=config.answer_tokens,
        url=url,
        baseline=False,
        progress=False,
        drop_at=config.storm_drop_at,
        report=config.report,
    )
    problems = settings.problems()
    if problems:
        raise ValueError("; ".join(problems))
    return settings


def _result(outcome: Outcome, router_stats: dict[str, Any] | None) -> dict[str, Any]:
    summary = outcome.rec.summary()
    counters = summary["counters"]
    ready = summary["latency_ms"].get("reconnect_ready_ms") or {}
    return {
        "seconds": round(outcome.seconds, 3),
        "cut": outcome.cut,
        "sessions_opened": counters.get("sessions_opened", 0),
        "connections_cut": counters.get("connections_cut", 0),
        "not_resumed": counters.get("restarted", 0),
        **{key: counters.get(key, 0) for key in CORRECTNESS},
        "resume_ready_ms": {k: ready.get(k) for k in ("count", "p50", "p99", "max")},
        "tokens": summary["tokens"],
        "errors": summary["errors"],
        "close_codes": summary["close_codes"],
        "router_stats": router_stats,
    }


def run_storm(config: RouterBenchConfig, log_dir: Path) -> dict[str, Any]:
    """The same storm direct, then through the router; one redis-server for both."""
    results: dict[str, Any] = {}
    with RedisProcess(log_dir) as redis:
        for target in TARGETS:
            print(f"[reconnect storm, {config.sessions} sessions] {target} ...", file=sys.stderr)
            with target_servers(target, redis, config.decode_rate, config, log_dir) as servers:
                reached, _worker, router = servers
                settings = storm_settings(config, reached.url)
                outcome = asyncio.run(drive("reconnect-storm", settings, reached.url, label=target))
                stats = router.stats() if router is not None else None
                results[target] = _result(outcome, stats)
    return results


def storm_figures(results: dict[str, Any]) -> list[Figure]:
    """Resume latency via the router beside direct; lost, doubled, not resumed."""
    routed, direct = results["router"], results["direct"]
    figures = [
        Figure(
            f"cut->session.ready {stat}",
            "ms",
            routed["resume_ready_ms"][stat],
            "direct",
            direct["resume_ready_ms"][stat],
        )
        for stat in ("p50", "p99")
    ]
    for key in ("sessions_opened", "connections_cut", *CORRECTNESS, "not_resumed"):
        figures.append(Figure(key.replace("_", " "), "count", routed[key], "direct", direct[key]))
    return figures


def storm_broken(results: dict[str, Any]) -> list[str]:
    """Why a storm failed its goals (never a speed): lost, doubled, unresumed or cut."""
    out = []
    for target, result in results.items():
        for key in (*CORRECTNESS, "not_resumed"):
            if result[key]:
                out.append(f"{target}: {key.replace('_', ' ')} {result[key]}")
        if not result["connections_cut"]:
            out.append(f"{target}: the storm cut no connection")
        if result["cut"]:
            out.append(f"{target}: the duration bound cut the run")
    return out


def print_storm(report: dict[str, Any], figures: list[Figure]) -> None:
    """The table, then what went wrong, if anything."""
    config = report["config"]
    print(
        f"\nrouter reconnect storm: {config['sessions']} sessions, all dropped at "
        f"{config['storm_drop_at']:g} x {config['duration']:g} s, resumed through the router"
    )
    print(format_table(figures, value_header="target"))
    for warning in report["warnings"]:
        print(f"warning: {warning}")
