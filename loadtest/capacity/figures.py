"""Per-round figures to medians and spreads, disturbed rounds flagged, the printed table."""

from __future__ import annotations

import statistics
from typing import Any

from loadtest.common.report import Figure

DISTURBED_PCT_OF_CORE = 25.0
"""A round in which processes outside the benchmark took more than this share of a core
in any measured window is flagged as disturbed (the machine is shared)."""

METRICS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("worker RSS, no session", "MiB", ("lifecycle", "rss_base_mib")),
    ("worker RSS per idle session", "KiB", ("lifecycle", "rss_per_idle_session_kib")),
    ("worker RSS per detached session", "KiB", ("lifecycle", "rss_per_detached_session_kib")),
    ("worker RSS per streaming session", "KiB", ("stream", "rss_per_streaming_session_kib")),
    ("worker RSS per voice session", "KiB", ("voice", "rss_per_voice_session_kib")),
    ("worker CPU, no session", "% of core", ("lifecycle", "cpu_baseline", "worker_pct_of_core")),
    ("worker CPU, idle sessions", "% of core", ("lifecycle", "cpu_idle", "worker_pct_of_core")),
    (
        "worker CPU, detached sessions",
        "% of core",
        ("lifecycle", "cpu_detached", "worker_pct_of_core"),
    ),
    (
        "worker CPU per idle session",
        "% of core",
        ("lifecycle", "worker_cpu_per_idle_session_pct_of_core"),
    ),
    (
        "worker CPU per streaming session",
        "% of core",
        ("stream", "worker_cpu_per_streaming_session_pct_of_core"),
    ),
    (
        "worker CPU per voice session",
        "% of core",
        ("voice", "cpu", "server_pct_of_core_per_session"),
    ),
    ("worker CPU per delivered token", "us", ("stream", "server_cpu_us_per_token")),
    ("worker cores per 1,000 tokens/s", "cores", ("stream", "core_per_1000_tokens_per_s")),
    ("delivered tokens/s (streaming phase)", "tokens/s", ("stream", "tokens_per_s")),
    ("Redis commands per token", "commands", ("stream", "redis_per_token", "commands")),
    (
        "Redis scripts (round trips) per token",
        "calls",
        ("stream", "redis_per_token", "by_command", "evalsha"),
    ),
    ("Redis bytes in per token", "bytes", ("stream", "redis_per_token", "net_in_bytes")),
    ("Redis CPU per token", "us", ("stream", "redis_per_token", "redis_cpu_us")),
    ("Redis memory growth per token", "bytes", ("stream", "redis_memory_growth_bytes_per_token")),
    ("Redis memory per idle session", "bytes", ("lifecycle", "redis_memory_per_session_bytes")),
    (
        "Redis commands/s per idle session",
        "commands",
        ("lifecycle", "redis_commands_per_s_per_idle_session"),
    ),
    (
        "Redis commands/s per detached session",
        "commands",
        ("lifecycle", "redis_commands_per_s_per_detached_session"),
    ),
    ("session start: worker CPU", "us", ("lifecycle", "session_start", "worker_cpu_us")),
    (
        "session start: Redis commands",
        "commands",
        ("lifecycle", "session_start", "redis", "commands"),
    ),
    (
        "session start: Redis bytes in",
        "bytes",
        ("lifecycle", "session_start", "redis", "net_in_bytes"),
    ),
    ("resume: worker CPU", "us", ("lifecycle", "resume", "worker_cpu_us")),
    ("resume: Redis commands", "commands", ("lifecycle", "resume", "redis", "commands")),
    ("resume: Redis bytes out", "bytes", ("lifecycle", "resume", "redis", "net_out_bytes")),
    ("resume latency p50 (all at once)", "ms", ("lifecycle", "resume", "latency_ms", "p50")),
    ("resume latency p99 (all at once)", "ms", ("lifecycle", "resume", "latency_ms", "p99")),
    (
        "voice: Redis memory growth per session",
        "bytes",
        ("voice", "redis_memory_growth_per_session_bytes"),
    ),
    (
        "Redis connections a worker opened while sessions started",
        "connections",
        ("lifecycle", "redis_connections_opened"),
    ),
    (
        "voice: Redis commands per session-second",
        "commands",
        ("voice", "redis_commands_per_session_s"),
    ),
    ("router RSS per relayed connection", "KiB", ("router", "router_rss_per_connection_kib")),
    ("router CPU per relayed frame", "us", ("router", "router_cpu_us_per_frame")),
    ("worker CPU per frame, via router", "us", ("router", "server_cpu_us_per_token")),
    ("router CPU per new connection", "us", ("router", "router_cpu_us_per_new_connection")),
    (
        "worker CPU per session start, via router",
        "us",
        ("router", "worker_cpu_us_per_session_start_via_router"),
    ),
)


def _dig(data: Any, path: tuple[str, ...]) -> float | None:
    for key in path:
        if not isinstance(data, dict) or data.get(key) is None:
            return None
        data = data[key]
    return float(data) if isinstance(data, int | float) else None


def others_in_round(round_: dict[str, Any]) -> float:
    """The most CPU other processes took in any window of the round, in % of a core."""
    lifecycle = round_["lifecycle"]
    shares = [
        lifecycle[k]["others_pct_of_core"] for k in ("cpu_baseline", "cpu_idle", "cpu_detached")
    ]
    shares += [round_[p]["cpu"]["others_pct_of_core"] or 0.0 for p in ("stream", "voice", "router")]
    return float(max(shares))


def summarize_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Every metric's median, min and max over the rounds, and over the undisturbed ones."""
    disturbed = [r["round"] for r in rounds if r["others_max_pct_of_core"] > DISTURBED_PCT_OF_CORE]
    summary: dict[str, Any] = {}
    for name, unit, path in METRICS:
        values = [_dig(r, path) for r in rounds]
        present = [v for v in values if v is not None]
        calm = [
            v
            for r, v in zip(rounds, values, strict=True)
            if v is not None and r["round"] not in disturbed
        ]
        summary[name] = {
            "unit": unit,
            "values": values,
            "median": round(statistics.median(present), 5) if present else None,
            "min": min(present) if present else None,
            "max": max(present) if present else None,
            "median_undisturbed": round(statistics.median(calm), 5) if calm else None,
        }
    return {"disturbed_rounds": disturbed, "metrics": summary}


BASELINES: dict[str, str] = {
    "worker RSS per detached session": "worker RSS per idle session",
    "worker RSS per streaming session": "worker RSS per idle session",
    "worker RSS per voice session": "worker RSS per idle session",
    "worker CPU, idle sessions": "worker CPU, no session",
    "worker CPU, detached sessions": "worker CPU, no session",
    "worker CPU per voice session": "worker CPU per streaming session",
    "resume: worker CPU": "session start: worker CPU",
    "resume: Redis commands": "session start: Redis commands",
    "router CPU per relayed frame": "worker CPU per frame, via router",
    "router CPU per new connection": "worker CPU per session start, via router",
}


def build_figures(results: dict[str, Any]) -> list[Figure]:
    """Each metric's median beside its same-run baseline, where one makes sense."""
    metrics = results["summary"]["metrics"]
    figures = []
    for name, unit, _ in METRICS:
        base = BASELINES.get(name)
        figures.append(
            Figure(
                name,
                unit,
                metrics[name]["median"],
                base or "",
                metrics[base]["median"] if base else None,
            )
        )
    return figures


def spread_table(results: dict[str, Any]) -> str:
    """Median, min and max of every metric, one line each."""
    lines = [f"{'metric (median over rounds)':<46} {'median':>12} {'min':>12} {'max':>12}"]
    for name, m in results["summary"]["metrics"].items():
        cells = ["n/a" if m[k] is None else f"{m[k]:,.4g}" for k in ("median", "min", "max")]
        lines.append(f"{name + ' (' + m['unit'] + ')':<46} " + " ".join(f"{c:>12}" for c in cells))
    return "\n".join(lines)


def warnings_for(results: dict[str, Any]) -> list[str]:
    """What makes a figure less trustworthy, in words."""
    notes = []
    for r in results["rounds"]:
        if r["round"] in results["summary"]["disturbed_rounds"]:
            notes.append(
                f"round {r['round']}: other processes took up to "
                f"{r['others_max_pct_of_core']:.0f}% of a core (disturbed)"
            )
        lifecycle = r["lifecycle"]
        if lifecycle["connect_failures"] or lifecycle["resume"]["failures"]:
            notes.append(
                f"round {r['round']}: failed starts or resumes: {lifecycle['resume']['failures']}"
            )
        for phase in ("stream", "voice", "router"):
            if r[phase].get("dropped_sessions"):
                notes.append(
                    f"round {r['round']} {phase}: {r[phase]['dropped_sessions']} dropped sessions"
                )
    return notes
