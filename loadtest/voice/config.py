"""Settings of one voice benchmark run: the full and quick profiles, its own flags, validation."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from loadtest.common.config import (
    LoadConfig,
    add_load_flags,
    add_report_flags,
    benchmark_parser,
    load_flags,
    pick_profile,
    report_path,
)

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


@dataclass(frozen=True, slots=True, kw_only=True)
class VoiceConfig(LoadConfig):
    """A ladder of voice loads, each rung measured against the worker and the bare server."""

    ladder: tuple[int, ...]
    bare_duration: float
    barge_in_share: float
    ping_share: float
    ping_interval: float
    decode_rate: float
    answer_tokens: int
    pace_slots: int
    stop_on_fail: bool
    seed: int
    criterion: PassCriterion = field(default_factory=PassCriterion)

    def problems(self) -> list[str]:
        """The shared checks, then the voice benchmark's own."""
        problems = super(VoiceConfig, self).problems()
        if not self.ladder or min(self.ladder) < self.clients:
            problems.append("every rung needs at least one session per client process")
        if not 0 <= self.barge_in_share <= 1 or not 0 <= self.ping_share <= 1:
            problems.append("--barge-in-share and --ping-share must be in [0, 1]")
        if self.ping_interval <= 0 or self.decode_rate <= 0 or self.answer_tokens < 1:
            problems.append("--ping-interval and --decode-rate must be > 0, --answer-tokens >= 1")
        if not 1 <= self.pace_slots <= CHUNK_MS:
            problems.append(f"--pace-slots must be 1..{CHUNK_MS}")
        if self.drain < 0 or self.bare_duration < 0:
            problems.append("--drain and --bare-duration must be >= 0")
        return problems


def build_parser() -> argparse.ArgumentParser:
    """Flags; defaults of ``None`` are filled from the full or the quick profile."""
    p = benchmark_parser(
        "voice",
        "Voice sessions on one worker: capacity (largest N sustained), speech_started "
        "and barge-in latency beside same-run ping RTT, worker CPU per session.",
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
    add_load_flags(p, drain=3.0, drain_help="max wait for owed events after the window (s)")
    p.add_argument(
        "--stop-on-fail", action="store_true", help="skip the larger rungs once one fails"
    )
    p.add_argument("--seed", type=int, default=1, help="seed of phases, fixtures and roles")
    add_report_flags(p, "extra flag for wsserver serve, e.g. --worker-arg=--vad=energy")
    return p


def resolve_config(args: argparse.Namespace) -> VoiceConfig:
    """Apply the profile, then explicit flags; validate bounds."""
    pick = pick_profile(args, FULL, QUICK)
    ladder = (
        tuple(args.sessions) if args.sessions else (QUICK_LADDER if args.quick else FULL_LADDER)
    )
    return VoiceConfig(
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
        stop_on_fail=args.stop_on_fail,
        seed=args.seed,
        report=report_path(args, "voice"),
        **load_flags(args),
    ).validated("voice")
