"""Settings of one benchmark run: the full and quick profiles, flags, validation."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TypedDict

from loadtest.servers import REPO_ROOT

PREFILL_MS = 20.0  # the simulated engine's fixed prefill base (prefill_base_s)

FULL = {"sessions": 1000, "idle_sessions": 10_000, "warmup": 5.0, "duration": 20.0}
QUICK = {"sessions": 100, "idle_sessions": 1000, "warmup": 2.0, "duration": 5.0}


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """Everything one run needs, after ``--quick`` and explicit flags are applied."""

    sessions: int
    idle_sessions: int
    warmup: float
    duration: float
    decode_rate: float
    answer_tokens: int
    interrupt_every: int
    interrupt_after: int
    ping_interval: float
    clients: int
    connect_concurrency: int
    drain: float
    phases: tuple[str, ...]
    quick: bool
    report: Path
    worker_args: list[str] = field(default_factory=list)


# -- command line -----------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """Flags; defaults of ``None`` are filled from the full or the quick profile."""
    p = argparse.ArgumentParser(
        prog="python -m loadtest.bench_stream",
        description="Worker vs bare websockets server: tokens/s, interrupt latency, RSS/session.",
    )
    p.add_argument("--quick", action="store_true", help="small run (100 streaming, 1000 idle)")
    p.add_argument("--sessions", type=int, help="concurrent streaming sessions (full: 1000)")
    p.add_argument("--idle-sessions", type=int, help="idle sessions for RSS (full: 10000)")
    p.add_argument("--warmup", type=float, help="seconds of load before measuring (full: 5)")
    p.add_argument("--duration", type=float, help="seconds measured per server (full: 20)")
    p.add_argument("--decode-rate", type=float, default=50.0, help="tokens/s per response")
    add_load_flags(p)
    p.add_argument(
        "--only", choices=("stream", "idle"), help="run one phase (default: both)", default=None
    )
    add_report_flags(
        p, "extra flag for wsserver serve, e.g. --worker-arg=--write-limit=16384 (repeatable)"
    )
    return p


def add_load_flags(p: argparse.ArgumentParser) -> None:
    """The streaming load's flags, alike in both benchmarks: answers, interrupts, pings, clients."""
    p.add_argument("--answer-tokens", type=int, default=100, help="tokens per answer")
    p.add_argument(
        "--interrupt-every", type=int, default=3, help="interrupt every n-th answer (0: never)"
    )
    p.add_argument(
        "--interrupt-after", type=int, help="tokens received before interrupting (half an answer)"
    )
    p.add_argument("--ping-interval", type=float, default=1.0, help="seconds between pings")
    p.add_argument("--clients", type=int, default=2, help="client processes")
    p.add_argument(
        "--connect-concurrency", type=int, default=32, help="handshakes in flight per client"
    )
    p.add_argument("--drain", type=float, default=10.0, help="max wait for owed answers (s)")


def add_report_flags(p: argparse.ArgumentParser, worker_arg_help: str) -> None:
    """``--report`` and the repeatable ``--worker-arg``, the last flags of both benchmarks."""
    p.add_argument("--report", type=Path, help="JSON report path")
    p.add_argument(
        "--worker-arg", action="append", default=[], metavar="FLAG", help=worker_arg_help
    )


def pick_profile(
    args: argparse.Namespace, full: dict[str, float], quick: dict[str, float]
) -> dict[str, float]:
    """The quick or the full profile (``--quick``), each value replaced by its flag if given."""
    profile = quick if args.quick else full
    return {k: getattr(args, k) if getattr(args, k) is not None else v for k, v in profile.items()}


class SharedFlags(TypedDict):
    """The values of the flags both benchmarks take alike, named as both configs name them."""

    answer_tokens: int
    interrupt_every: int
    interrupt_after: int
    ping_interval: float
    clients: int
    connect_concurrency: int
    drain: float
    quick: bool
    worker_args: list[str]


def shared_flags(args: argparse.Namespace) -> SharedFlags:
    """The shared flags' values; ``--interrupt-after`` defaults to half an answer."""
    return SharedFlags(
        answer_tokens=args.answer_tokens,
        interrupt_every=args.interrupt_every,
        interrupt_after=args.interrupt_after or max(1, args.answer_tokens // 2),
        ping_interval=args.ping_interval,
        clients=args.clients,
        connect_concurrency=args.connect_concurrency,
        drain=args.drain,
        quick=args.quick,
        worker_args=list(args.worker_arg),
    )


def report_path(args: argparse.Namespace, benchmark: str) -> Path:
    """``--report``, else ``loadtest/reports/<benchmark>-<timestamp>.json``."""
    if args.report:
        return Path(args.report)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return REPO_ROOT / "loadtest" / "reports" / f"{benchmark}-{stamp}.json"


def resolve_config(args: argparse.Namespace) -> BenchConfig:
    """Apply the profile, then explicit flags; validate bounds."""
    pick = pick_profile(args, FULL, QUICK)
    config = BenchConfig(
        sessions=int(pick["sessions"]),
        idle_sessions=int(pick["idle_sessions"]),
        warmup=float(pick["warmup"]),
        duration=float(pick["duration"]),
        decode_rate=args.decode_rate,
        phases=(args.only,) if args.only else ("stream", "idle"),
        report=report_path(args, "stream"),
        **shared_flags(args),
    )
    _validate(config)
    return config


def shared_problems(*, clients: int, duration: float, warmup: float) -> list[str]:
    """What both benchmarks refuse in the client processes and the measurement window."""
    problems = []
    if not 1 <= clients <= 16:
        problems.append("--clients must be 1..16")
    if not 0 < duration <= 600 or not 0 <= warmup <= 120:
        problems.append("--duration must be in (0, 600] and --warmup in [0, 120]")
    return problems


def _validate(config: BenchConfig) -> None:
    problems = shared_problems(
        clients=config.clients, duration=config.duration, warmup=config.warmup
    )
    if config.sessions < config.clients or config.idle_sessions < config.clients:
        problems.append("need at least one session per client process")
    if config.decode_rate <= 0 or config.answer_tokens < 2:
        problems.append("--decode-rate must be > 0 and --answer-tokens >= 2")
    if config.ping_interval < 0 or config.interrupt_every < 0 or config.drain < 0:
        problems.append("--ping-interval, --interrupt-every and --drain must be >= 0")
    if config.interrupt_after >= config.answer_tokens:
        problems.append("--interrupt-after must be below --answer-tokens")
    if problems:
        raise SystemExit("bench_stream: " + "; ".join(problems))


def expected_duty(config: BenchConfig) -> float:
    """Share of time a session streams: answers are back to back, some cut short, plus prefill."""
    full = config.answer_tokens / config.decode_rate + PREFILL_MS / 1000
    cut = config.interrupt_after / config.decode_rate + PREFILL_MS / 1000
    share_cut = 1 / config.interrupt_every if config.interrupt_every else 0.0
    tokens = (1 - share_cut) * config.answer_tokens + share_cut * config.interrupt_after
    seconds = (1 - share_cut) * full + share_cut * cut
    return tokens / (seconds * config.decode_rate)
