"""Settings of one store benchmark run: profiles, flags, validation."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from loadtest.config import (
    BenchConfig,
    add_load_flags,
    add_report_flags,
    pick_profile,
    report_path,
    shared_flags,
    shared_problems,
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


@dataclass(frozen=True, slots=True)
class StoreBenchConfig:
    """Everything one run needs, after ``--quick`` and explicit flags are applied."""

    sessions: int
    storm_sessions: int
    warmup: float
    duration: float
    decode_rate: float
    saturation_rate: float
    """A second, saturating decode rate for the streaming pair (0: skip)."""
    storm_decode_rate: float
    rounds: int
    """Streaming measurements per store and rate, in alternating order."""
    answer_tokens: int
    interrupt_every: int
    interrupt_after: int
    ping_interval: float
    clients: int
    connect_concurrency: int
    drain: float
    storm_stream_s: float
    """Seconds the storm's answers stream on A before every connection drops."""
    storm_after_s: float
    """Seconds after the drop that the sessions run on before the verdict."""
    resume_attempts: int
    resume_timeout_s: float
    """Bound on one resume attempt (connect, handshake, session.ready)."""
    phases: tuple[str, ...]
    quick: bool
    report: Path
    worker_args: list[str] = field(default_factory=list)

    def stream_config(self, decode_rate: float, store_url: str) -> BenchConfig:
        """The streaming benchmark's settings for one store at one decode rate."""
        return BenchConfig(
            sessions=self.sessions,
            idle_sessions=self.sessions,
            warmup=self.warmup,
            duration=self.duration,
            decode_rate=decode_rate,
            answer_tokens=self.answer_tokens,
            interrupt_every=self.interrupt_every,
            interrupt_after=self.interrupt_after,
            ping_interval=self.ping_interval,
            clients=self.clients,
            connect_concurrency=self.connect_concurrency,
            drain=self.drain,
            phases=("stream",),
            quick=self.quick,
            report=self.report,
            worker_args=[*self.worker_args, f"--store={store_url}"],
        )

    @property
    def lease_ttl(self) -> float:
        """The workers' ``--lease-ttl`` (their default unless passed with ``--worker-arg``)."""
        for arg in self.worker_args:
            if arg.startswith("--lease-ttl="):
                return float(arg.split("=", 1)[1])
        return 10.0


def build_parser() -> argparse.ArgumentParser:
    """Flags; defaults of ``None`` are filled from the full or the quick profile."""
    p = argparse.ArgumentParser(
        prog="python -m loadtest.bench_store",
        description="Worker with the Redis store vs the memory store: tokens/s, round trips "
        "per token, and a reconnect storm (takeover on another worker vs resume in place).",
    )
    p.add_argument("--quick", action="store_true", help="small run (100 sessions each)")
    p.add_argument("--sessions", type=int, help="concurrent streaming sessions (full: 1000)")
    p.add_argument("--storm-sessions", type=int, help="sessions in the storm (full: 1000)")
    p.add_argument("--warmup", type=float, help="seconds of load before measuring (full: 5)")
    p.add_argument("--duration", type=float, help="seconds measured per worker (full: 20)")
    p.add_argument(
        "--decode-rate", type=float, help="tokens/s per answer, unsaturated (full: 3, quick: 10)"
    )
    p.add_argument(
        "--saturation-rate",
        type=float,
        help="tokens/s per answer for a saturating pair (full: 20, quick: 100; 0: skip)",
    )
    p.add_argument("--storm-decode-rate", type=float, help="storm tokens/s (default: decode)")
    p.add_argument("--rounds", type=int, help="streaming runs per store and rate (full: 2)")
    add_load_flags(p)
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
    config = StoreBenchConfig(
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
        **shared_flags(args),
    )
    _validate(config)
    return config


def _validate(config: StoreBenchConfig) -> None:
    problems = shared_problems(
        clients=config.clients, duration=config.duration, warmup=config.warmup
    )
    if min(config.sessions, config.storm_sessions) < config.clients:
        problems.append("need at least one session per client process")
    if max(config.sessions, config.storm_sessions) > 20_000:
        problems.append("at most 20,000 sessions")
    if config.decode_rate <= 0 or config.storm_decode_rate <= 0 or config.saturation_rate < 0:
        problems.append("decode rates must be > 0 (--saturation-rate 0 skips that pair)")
    if config.answer_tokens < 2 or config.interrupt_after >= config.answer_tokens:
        problems.append("--answer-tokens must be >= 2 and above --interrupt-after")
    if not 0.5 <= config.storm_stream_s <= 60 or not 1 <= config.storm_after_s <= 120:
        problems.append("--storm-stream-s must be in [0.5, 60] and --storm-after-s in [1, 120]")
    if not 1 <= config.rounds <= 5:
        problems.append("--rounds must be 1..5")
    if not 1 <= config.resume_attempts <= 20 or not 0.5 <= config.resume_timeout_s <= 60:
        problems.append("--resume-attempts must be 1..20 and --resume-timeout in [0.5, 60]")
    if any(arg.startswith("--store=") for arg in config.worker_args):
        problems.append("--store is set by the benchmark; do not pass it with --worker-arg")
    if problems:
        raise SystemExit("bench_store: " + "; ".join(problems))
