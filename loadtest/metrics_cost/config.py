"""Settings of one metrics-cost run: the streaming load and how many alternating rounds."""

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

FULL = {"sessions": 200, "warmup": 3.0, "duration": 15.0, "rounds": 2}
QUICK = {"sessions": 50, "warmup": 1.0, "duration": 3.0, "rounds": 1}


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsCostConfig(StreamLoadConfig):
    """The streaming load, run ``rounds`` times on each worker (on, off, on, off, ...)."""

    rounds: int

    def problems(self) -> list[str]:
        """The shared checks, then this benchmark's own."""
        problems = super(MetricsCostConfig, self).problems()
        if self.rounds < 1:
            problems.append("--rounds must be >= 1")
        if self.sessions < self.clients:
            problems.append("need at least one session per client process")
        if self.decode_rate <= 0:
            problems.append("--decode-rate must be > 0")
        return problems


def build_parser() -> argparse.ArgumentParser:
    """Flags; defaults of ``None`` are filled from the full or the quick profile."""
    p = benchmark_parser(
        "metrics_cost",
        "Worker CPU per delivered token with --metrics on vs --metrics off, same load, same run.",
    )
    add_window_flags(p, quick_help="small run (50 sessions, one round)", per="worker and round")
    p.add_argument("--decode-rate", type=float, default=50.0, help="tokens/s per response")
    p.add_argument(
        "--rounds", type=int, help="rounds of (on, off), each worker fresh (full: 2, quick: 1)"
    )
    add_stream_load_flags(p)
    add_report_flags(
        p, "extra flag for both workers, e.g. --worker-arg=--write-limit=16384 (repeatable)"
    )
    return p


def resolve_config(args: argparse.Namespace) -> MetricsCostConfig:
    """Apply the profile, then explicit flags; validate bounds."""
    pick = pick_profile(args, FULL, QUICK)
    return MetricsCostConfig(
        sessions=int(pick["sessions"]),
        warmup=float(pick["warmup"]),
        duration=float(pick["duration"]),
        decode_rate=args.decode_rate,
        phases=("stream",),
        rounds=int(pick["rounds"]),
        report=report_path(args, "metrics_cost"),
        **stream_load_flags(args),
    ).validated("metrics_cost")
