"""Settings of one streaming benchmark run: the full and quick profiles, its own flags."""

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

FULL = {"sessions": 1000, "idle_sessions": 10_000, "warmup": 5.0, "duration": 20.0}
QUICK = {"sessions": 100, "idle_sessions": 1000, "warmup": 2.0, "duration": 5.0}


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamConfig(StreamLoadConfig):
    """The streaming load, plus K idle sessions for the RSS figure."""

    idle_sessions: int

    def sessions_in(self, phase: str) -> int:
        """``idle_sessions`` in the idle phase, ``sessions`` while streaming."""
        return self.idle_sessions if phase == "idle" else self.sessions

    def problems(self) -> list[str]:
        """The shared checks, then the streaming benchmark's own."""
        problems = super(StreamConfig, self).problems()
        if min(self.sessions, self.idle_sessions) < self.clients:
            problems.append("need at least one session per client process")
        if self.decode_rate <= 0:
            problems.append("--decode-rate must be > 0")
        return problems


def build_parser() -> argparse.ArgumentParser:
    """Flags; defaults of ``None`` are filled from the full or the quick profile."""
    p = benchmark_parser(
        "stream", "Worker vs bare websockets server: tokens/s, interrupt latency, RSS/session."
    )
    add_window_flags(p, quick_help="small run (100 streaming, 1000 idle)", per="server")
    p.add_argument("--idle-sessions", type=int, help="idle sessions for RSS (full: 10000)")
    p.add_argument("--decode-rate", type=float, default=50.0, help="tokens/s per response")
    add_stream_load_flags(p)
    p.add_argument(
        "--only", choices=("stream", "idle"), help="run one phase (default: both)", default=None
    )
    add_report_flags(
        p, "extra flag for wsserver serve, e.g. --worker-arg=--write-limit=16384 (repeatable)"
    )
    return p


def resolve_config(args: argparse.Namespace) -> StreamConfig:
    """Apply the profile, then explicit flags; validate bounds."""
    pick = pick_profile(args, FULL, QUICK)
    return StreamConfig(
        sessions=int(pick["sessions"]),
        idle_sessions=int(pick["idle_sessions"]),
        warmup=float(pick["warmup"]),
        duration=float(pick["duration"]),
        decode_rate=args.decode_rate,
        phases=(args.only,) if args.only else ("stream", "idle"),
        report=report_path(args, "stream"),
        **stream_load_flags(args),
    ).validated("stream")
