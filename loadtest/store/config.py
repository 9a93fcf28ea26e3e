"""Settings of one store benchmark run: profiles, its own flags, validation."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

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

FULL = {
    "sessions": 1000,
    "storm_sessions": 1000,
    "warmup": 5.0,
    "duration": 20.0,
    "decode_rate": 3.0,
    "saturation_rate": 20.0,
    "rounds": 2,
}
QUICK = {
    "sessions": 100,
    "storm_sessions": 100,
    "warmup": 2.0,
    "duration": 5.0,
    "decode_rate": 10.0,
    "saturation_rate": 100.0,
    "rounds": 1,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreBenchConfig(StreamLoadConfig):
    """The streaming load on each store, and the reconnect storm."""

    storm_sessions: int
    saturation_rate: float
    """A second, saturating decode rate for the streaming pair (0: skip)."""
    storm_decode_rate: float
    rounds: int
    """Streaming measurements per store and rate, in alternating order."""
    storm_stream_s: float
    """Seconds the storm's answers stream on A before every connection drops."""
    storm_after_s: float
    """Seconds after the drop that the sessions run on before the verdict."""
    resume_attempts: int
    resume_timeout_s: float
    """Bound on one resume attempt (connect, handshake, session.ready)."""

    @property
    def lease_ttl(self) -> float:
        """The workers' ``--lease-ttl`` (their default unless passed with ``--worker-arg``)."""
        for arg in self.worker_args:
            if arg.startswith("--lease-ttl="):
                return float(arg.split("=", 1)[1])
        return 10.0

    def problems(self) -> list[str]:
        """The shared checks, then the store benchmark's own."""
        problems = super(StoreBenchConfig, self).problems()
        if min(self.sessions, self.storm_sessions) < self.clients:
            problems.append("need at least one session per client process")
        if max(self.sessions, self.storm_sessions) > 20_000:
            problems.append("at most 20,000 sessions")
        if self.decode_rate <= 0 or self.storm_decode_rate <= 0 or self.saturation_rate < 0:
            problems.append("decode rates must be > 0 (--saturation-rate 0 skips that pair)")
        if not 0.5 <= self.storm_stream_s <= 60 or not 1 <= self.storm_after_s <= 120:
            problems.append("--storm-stream-s must be in [0.5, 60] and --storm-after-s in [1, 120]")
        if not 1 <= self.rounds <= 5:
            problems.append("--rounds must be 1..5")
        if not 1 <= self.resume_attempts <= 20 or not 0.5 <= self.resume_timeout_s <= 60:
            problems.append("--resume-attempts must be 1..20 and --resume-timeout in [0.5, 60]")
        if any(arg.startswith("--store=") for arg in self.worker_args):
            problems.append("--store is set by the benchmark; do not pass it with --worker-arg")
        return problems


def build_parser() -> argparse.ArgumentParser:
    """Flags; defaults of ``None`` are filled from the full or the quick profile."""
    p = benchmark_parser(
        "store",
        "Worker with the Redis store vs the memory store: tokens/s, round trips "
        "per token, and a reconnect storm (takeover on another worker vs resume in place).",
    )
    add_window_flags(p, quick_help="small run (100 sessions each)", per="worker")
    p.add_argument("--storm-sessions", type=int, help="sessions in the storm (full: 1000)")
    add_rate_flags(
        p,
        decode_help="tokens/s per answer, unsaturated (full: 3, quick: 10)",
        saturation_help="tokens/s per answer for a saturating pair (full: 20, quick: 100; 0: skip)",
    )
    p.add_argument("--storm-decode-rate", type=float, help="storm tokens/s (default: decode)")
    p.add_argument("--rounds", type=int, help="streaming runs per store and rate (full: 2)")
    add_stream_load_flags(p)
    p.add_argument("--storm-stream-s", type=float, default=3.0, help="streaming before the drop")
    p.add_argument("--storm-after-s", type=float, default=15.0, help="run after the drop (s)")
    p.add_argument("--resume-attempts", type=int, default=5, help="connects per resuming session")
    p.add_argument(
        "--resume-timeout", type=float, default=10.0, help="bound on one resume attempt (s)"
    )
    p.add_argument("--only", choices=("stream", "storm"), help="run one part (default: both)")
    add_report_flags(
        p, "extra flag for every wsserver serve, e.g. --worker-arg=--store-flush-ms=10"
    )
    return p


def resolve_config(args: argparse.Namespace) -> StoreBenchConfig:
    """Apply the profile, then explicit flags; validate bounds."""
    pick = pick_profile(args, FULL, QUICK)
    return StoreBenchConfig(
        sessions=int(pick["sessions"]),
        storm_sessions=int(pick["storm_sessions"]),
        warmup=float(pick["warmup"]),
        duration=float(pick["duration"]),
        decode_rate=float(pick["decode_rate"]),
        saturation_rate=float(pick["saturation_rate"]),
        storm_decode_rate=args.storm_decode_rate or float(pick["decode_rate"]),
        rounds=int(pick["rounds"]),
        storm_stream_s=args.storm_stream_s,
        storm_after_s=args.storm_after_s,
        resume_attempts=args.resume_attempts,
        resume_timeout_s=args.resume_timeout,
        phases=(args.only,) if args.only else ("stream", "storm"),
        report=report_path(args, "store"),
        **stream_load_flags(args),
    ).validated("store")
