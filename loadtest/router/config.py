"""Settings of one router benchmark run: profiles, its own flags, validation."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from loadtest.common.config import (
    StreamLoadConfig,
    add_rate_flags,
    add_report_flags,
    add_stream_load_flags,
    add_window_flags,
    benchmark_parser,
    pick_profile,
    report_path,
    stream_load_flags,
)

TARGETS = ("direct", "router")
"""Where the clients connect: the worker itself, or the router in front of it."""

TOKENS_RATIO_TARGET = 0.85
"""Delivered tokens/s through the router over direct, at the least."""

REGISTRY_INTERVAL_S = 0.5
"""The worker's ``--registry-interval``: the router sees a fresh worker within it."""

FULL = {
    "sessions": 1000,
    "warmup": 5.0,
    "duration": 20.0,
    "decode_rate": 3.0,
    "saturation_rate": 50.0,
    "idle_duration": 8.0,
    "rounds": 1,
}
QUICK = {
    "sessions": 100,
    "warmup": 2.0,
    "duration": 5.0,
    "decode_rate": 50.0,
    "saturation_rate": 0.0,
    "idle_duration": 3.0,
    "rounds": 1,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RouterBenchConfig(StreamLoadConfig):
    """The streaming load reached directly and through the router, and an idle ping pair.

    ``decode_rate`` is the main pair's: the worker keeps up with it directly.
    """

    saturation_rate: float
    """A second streaming pair at this rate (0: skip), which saturates the worker."""
    idle_sessions: int
    """Sessions that only ping, for the round trip without any streaming load."""
    idle_ping_interval: float
    idle_duration: float
    rounds: int
    router_args: list[str] = field(default_factory=list)
    storm: bool = False
    """Run the reconnect storm (direct, then through the router) instead of the pairs."""
    storm_drop_at: float = 0.5
    """When the storm drops every connection, as a share of ``duration``."""

    @property
    def rates(self) -> list[float]:
        """The decode rates of the streaming pairs, the main one first."""
        return [self.decode_rate] + ([self.saturation_rate] if self.saturation_rate else [])

    def problems(self) -> list[str]:
        """The shared checks, then the router benchmark's own."""
        problems = super(RouterBenchConfig, self).problems()
        if min(self.sessions, self.idle_sessions) < self.clients:
            problems.append("need at least one session per client process")
        if self.sessions > 20_000:
            problems.append("at most 20,000 sessions")
        if self.decode_rate <= 0 or self.saturation_rate < 0:
            problems.append("--decode-rate must be > 0 (--saturation-rate 0 skips that pair)")
        if not 0.001 <= self.idle_ping_interval <= 10 or not 0.5 <= self.idle_duration <= 120:
            problems.append(
                "--idle-ping-interval must be in [0.001, 10], --idle-duration in [0.5, 120]"
            )
        if not 0.1 <= self.storm_drop_at <= 0.9:
            problems.append("--drop-at must be in [0.1, 0.9]")
        if not 1 <= self.rounds <= 5:
            problems.append("--rounds must be 1..5")
        if any(arg.startswith(("--store=", "--registry-interval=")) for arg in self.worker_args):
            problems.append("--store and --registry-interval are set by the benchmark")
        if any(arg.startswith(("--store=", "--port=", "--host=")) for arg in self.router_args):
            problems.append("--store, --host and --port of the router are set by the benchmark")
        return problems


def build_parser() -> argparse.ArgumentParser:
    """Flags; defaults of ``None`` are filled from the full or the quick profile."""
    p = benchmark_parser(
        "router",
        "The worker reached directly vs through wsserver router: delivered "
        "tokens/s, ping round trips under load and idle, router CPU per relayed frame.",
    )
    add_window_flags(p, quick_help="small run (100 sessions, one rate)", per="phase")
    add_rate_flags(
        p,
        decode_help="tokens/s per answer, unsaturated (full: 3, quick: 50)",
        saturation_help="tokens/s per answer of a second pair that saturates the worker "
        "(full: 50 as loadtest.stream, quick: 0 = skip)",
    )
    p.add_argument(
        "--idle-sessions", type=int, default=10, help="sessions that only ping (idle RTT)"
    )
    p.add_argument(
        "--idle-ping-interval", type=float, default=0.02, help="seconds between their pings"
    )
    p.add_argument("--idle-duration", type=float, help="seconds of idle pings (full: 8)")
    p.add_argument(
        "--rounds", type=int, help="measurements per target, order alternating (full: 1)"
    )
    add_stream_load_flags(p)
    p.add_argument(
        "--storm",
        action="store_true",
        help="instead: a reconnect storm of --sessions sessions (all dropped at once, all "
        "resume), direct and through the router; resume latency, lost, doubled",
    )
    p.add_argument(
        "--drop-at", type=float, default=0.5, help="--storm: drop time / --duration (0.5)"
    )
    p.add_argument("--only", choices=("stream", "idle"), help="run one part (default: both)")
    add_report_flags(p, "extra flag for wsserver serve, e.g. --worker-arg=--write-limit=16384")
    p.add_argument(
        "--router-arg",
        action="append",
        default=[],
        metavar="FLAG",
        help="extra flag for wsserver router, e.g. --router-arg=--refresh-interval=0.5",
    )
    return p


def resolve_config(args: argparse.Namespace) -> RouterBenchConfig:
    """Apply the profile, then explicit flags; validate bounds."""
    pick = pick_profile(args, FULL, QUICK)
    return RouterBenchConfig(
        sessions=int(pick["sessions"]),
        warmup=float(pick["warmup"]),
        duration=float(pick["duration"]),
        decode_rate=float(pick["decode_rate"]),
        saturation_rate=float(pick["saturation_rate"]),
        idle_sessions=args.idle_sessions,
        idle_ping_interval=args.idle_ping_interval,
        idle_duration=float(pick["idle_duration"]),
        rounds=int(pick["rounds"]),
        phases=(args.only,) if args.only else ("idle", "stream"),
        report=report_path(args, "router-storm" if args.storm else "router"),
        router_args=list(args.router_arg),
        storm=args.storm,
        storm_drop_at=args.drop_at,
        **stream_load_flags(args),
    ).validated("router")
