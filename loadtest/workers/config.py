"""Settings of one workers benchmark run: profiles, its own flags, validation."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from loadtest.common.config import (
    StreamLoadConfig,
    add_report_flags,
    add_stream_load_flags,
    add_window_flags,
    benchmark_parser,
    pick_profile,
    report_path,
    stream_load_flags,
)

FULL = {"sessions": 1000, "warmup": 5.0, "duration": 20.0, "decode_rate": 20.0, "rounds": 2}
QUICK = {"sessions": 200, "warmup": 2.0, "duration": 6.0, "decode_rate": 50.0, "rounds": 1}


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkersBenchConfig(StreamLoadConfig):
    """The same streaming load on ``--workers 1`` and on ``--workers N``, Redis store."""

    workers: int
    rounds: int
    """Measurements per worker count, in alternating order."""

    def problems(self) -> list[str]:
        """The shared checks, then this benchmark's own."""
        problems = super(WorkersBenchConfig, self).problems()
        if not 2 <= self.workers <= 64:
            problems.append("--workers must be 2..64")
        if not 1 <= self.rounds <= 5:
            problems.append("--rounds must be 1..5")
        if self.sessions < self.clients or self.sessions > 20_000:
            problems.append("--sessions must be from --clients to 20,000")
        if self.decode_rate <= 0:
            problems.append("--decode-rate must be > 0")
        if any(arg.startswith(("--store", "--workers")) for arg in self.worker_args):
            problems.append("--store and --workers are set by the benchmark")
        return problems


def build_parser() -> argparse.ArgumentParser:
    """Flags; defaults of ``None`` are filled from the full or the quick profile."""
    p = benchmark_parser(
        "workers",
        "Delivered tokens/s and CPU of wsserver serve --workers N against one process "
        "(--workers 1), both on the Redis store, under the same streaming load in one run.",
    )
    add_window_flags(p, quick_help="small run (200 sessions)", per="worker count")
    p.add_argument("--workers", type=int, default=2, help="processes of the group (default 2)")
    p.add_argument(
        "--decode-rate", type=float, help="tokens/s per answer (full: 20, quick: 50; saturating)"
    )
    p.add_argument("--rounds", type=int, help="runs per worker count (full: 2, quick: 1)")
    add_stream_load_flags(p)
    add_report_flags(
        p, "extra flag for every wsserver serve, e.g. --worker-arg=--store-flush-ms=10"
    )
    return p


def resolve_config(args: argparse.Namespace) -> WorkersBenchConfig:
    """Apply the profile, then explicit flags; validate bounds."""
    pick = pick_profile(args, FULL, QUICK)
    return WorkersBenchConfig(
        sessions=int(pick["sessions"]),
        warmup=float(pick["warmup"]),
        duration=float(pick["duration"]),
        decode_rate=float(pick["decode_rate"]),
        rounds=int(pick["rounds"]),
        workers=args.workers,
        phases=("stream",),
        report=report_path(args, "workers"),
        **stream_load_flags(args),
    ).validated("workers")
