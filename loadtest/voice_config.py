"""Settings of one voice benchmark run: the full and quick profiles, flags, validation."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from loadtest.config import add_report_flags, report_path, shared_problems

FULL = {"warmup": 2.0, "duration": 20.0, "bare_duration": 8.0}
QUICK = {"warmup": 1.0, "duration": 8.0, "bare_duration": 4.0}
FULL_LADDER = (100, 200, 300, 400, 500)
QUICK_LADDER = (20, 60)

CHUNK_MS = 20
"""Microphone chunk length: 640 bytes of 16 kHz PCM16, one VAD window."""


@dataclass(frozen=True, slots=True)
class PassCriterion:
    """What a rung must show to count as sustained (see ``loadtest/README.md``)."""

    max_delay_ms: float = 250.0
    """speech_started delay p99 and barge-in speech->done p99 stay below this."""
    max_ping_multiple: float = 3.0
    """speech_started delay p99 at most this many times the same-run ping RTT p99 ..."""
    delay_floor_ms: float = float(CHUNK_MS)
    """... or at most one chunk, whichever is larger (a lag under a chunk is inaudible)."""
    max_growth_ms: float = float(CHUNK_MS)
    """speech_started delay p50 may rise from the window's first half to its second by
    this much, or by the first half's p50 if larger (it may double): more is a backlog."""
    max_send_lag_ms: float = float(CHUNK_MS)
    """Client send lag p99 above this: the rig fell behind, the rung is not a verdict."""


@dataclass(frozen=True, slots=True)
class VoiceConfig:
    """Everything one run needs, after ``--quick`` and explicit flags are applied."""

    ladder: tuple[int, ...]
    warmup: float
    duration: float
    bare_duration: float
    barge_in_share: float
    ping_share: float
    ping_interval: float
    decode_rate: float
    answer_tokens: int
    pace_slots: int
    clients: int
    connect_concurrency: int
    drain: float
    stop_on_fail: bool
    seed: int
    quick: bool
    report: Path
    criterion: PassCriterion = field(default_factory=PassCriterion)
    worker_args: list[str] = field(default_factory=list)


def build_parser() -> argparse.ArgumentParser:
    """Flags; defaults of ``None`` are filled from the full or the quick profile."""
    p = argparse.ArgumentParser(
        prog="python -m loadtest.bench_voice",
        description=(
            "Voice sessions on one worker: capacity (largest N sustained), speech_started "
            "and barge-in latency beside same-run ping RTT, worker CPU per session."
        ),
    )
    p.add_argument("--quick", action="store_true", help="small ladder (20, 60 sessions), ~1 min")
    p.add_argument(
        "--sessions",
        type=int,
        nargs="+",
        metavar="N",
        help="ladder of concurrent voice sessions (full: 50 100 150 250 500)",
    )
    p.add_argument("--warmup", type=float, help="seconds of audio before measuring (full: 2)")
    p.add_argument("--duration", type=float, help="seconds measured per rung (full: 20)")
    p.add_argument(
        "--bare-duration",
        type=float,
        help="seconds measured against the bare baseline server per rung (full: 8; 0 skips it)",
    )
    p.add_argument(
        "--barge-in-share",
        type=float,
        default=0.1,
        help="share of sessions that ask a question and barge in on the answer (0.1)",
    )
    p.add_argument(
        "--ping-share", type=float, default=0.1, help="share of sessions that send pings (0.1)"
    )
    p.add_argument("--ping-interval", type=float, default=0.5, help="seconds between pings")
    p.add_argument(
        "--decode-rate",
        type=float,
        default=10.0,
        help="tokens/s per answer; each token carries 1000/R ms of audio (10: 100 ms)",
    )
    p.add_argument(
        "--answer-tokens", type=int, default=400, help="tokens per answer (long: speech cuts it)"
    )
    p.add_argument(
        "--pace-slots",
        type=int,
        default=4,
        help="each client's pacing tick runs this many times per chunk, each time sending "
        "the frames of one slot of its sessions, so frames do not reach the server in one "
        "burst (1: every session's frame at once)",
    )
    p.add_argument("--clients", type=int, default=2, help="client processes")
    p.add_argument(
        "--connect-concurrency", type=int, default=32, help="handshakes in flight per client"
    )
    p.add_argument(
        "--drain", type=float, default=3.0, help="max wait for owed events after the window (s)"
    )
    p.add_argument(
        "--stop-on-fail", action="store_true", help="skip the larger rungs once one fails"
    )
    p.add_argument("--seed", type=int, default=1, help="seed of phases, fixtures and roles")
    add_report_flags(p, "extra flag for wsserver serve, e.g. --worker-arg=--vad=energy")
    return p


def resolve_config(args: argparse.Namespace) -> VoiceConfig:
    """Apply the profile, then explicit flags; validate bounds."""
    profile = QUICK if args.quick else FULL
    pick = {k: v if getattr(args, k) is None else getattr(args, k) for k, v in profile.items()}
    ladder = (
        tuple(args.sessions) if args.sessions else (QUICK_LADDER if args.quick else FULL_LADDER)
    )
    config = VoiceConfig(
        ladder=tuple(sorted(set(ladder))),
        warmup=float(pick["warmup"]),
        duration=float(pick["duration"]),
        bare_duration=float(pick["bare_duration"]),
        barge_in_share=args.barge_in_share,
        ping_share=args.ping_share,
        ping_interval=args.ping_interval,
        decode_rate=args.decode_rate,
        answer_tokens=args.answer_tokens,
        pace_slots=args.pace_slots,
        clients=args.clients,
        connect_concurrency=args.connect_concurrency,
        drain=args.drain,
        stop_on_fail=args.stop_on_fail,
        seed=args.seed,
        quick=args.quick,
        report=report_path(args, "voice"),
        worker_args=list(args.worker_arg),
    )
    _validate(config)
    return config


def _validate(config: VoiceConfig) -> None:
    problems = shared_problems(
        clients=config.clients, duration=config.duration, warmup=config.warmup
    )
    if not config.ladder or min(config.ladder) < config.clients:
        problems.append("every rung needs at least one session per client process")
    if not 0 <= config.barge_in_share <= 1 or not 0 <= config.ping_share <= 1:
        problems.append("--barge-in-share and --ping-share must be in [0, 1]")
    if config.ping_interval <= 0 or config.decode_rate <= 0 or config.answer_tokens < 1:
        problems.append("--ping-interval and --decode-rate must be > 0, --answer-tokens >= 1")
    if not 1 <= config.pace_slots <= CHUNK_MS:
        problems.append(f"--pace-slots must be 1..{CHUNK_MS}")
    if config.drain < 0 or config.bare_duration < 0:
        problems.append("--drain and --bare-duration must be >= 0")
    if problems:
        raise SystemExit("bench_voice: " + "; ".join(problems))
