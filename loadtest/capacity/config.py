"""Settings of one capacity run: profiles, its own flags, validation, derived loads."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from loadtest.common.config import (
    LoadConfig,
    StreamLoadConfig,
    add_load_flags,
    add_report_flags,
    benchmark_parser,
    load_flags,
    pick_profile,
    report_path,
)
from loadtest.voice.config import VoiceConfig
from loadtest.voice.config import build_parser as voice_parser
from loadtest.voice.config import resolve_config as resolve_voice

FULL = {
    "idle_sessions": 2000,
    "streaming_sessions": 300,
    "voice_sessions": 40,
    "router_sessions": 1000,
    "warmup": 3.0,
    "duration": 10.0,
    "rounds": 3,
}
QUICK = {
    "idle_sessions": 300,
    "streaming_sessions": 60,
    "voice_sessions": 10,
    "router_sessions": 200,
    "warmup": 1.0,
    "duration": 3.0,
    "rounds": 1,
}
PROFILE_KEYS = tuple(FULL)


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityConfig(LoadConfig):
    """Idle, detached, resumed, streaming, voice and relayed sessions, each phase per round."""

    idle_sessions: int
    streaming_sessions: int
    voice_sessions: int
    router_sessions: int
    token_rate: float
    """Tokens/s of each streaming answer (a realistic reading speed, not saturating)."""
    answer_tokens: int
    rounds: int

    def problems(self) -> list[str]:
        """The shared checks, then this benchmark's own."""
        problems = super(CapacityConfig, self).problems()
        counts = (
            self.idle_sessions,
            self.streaming_sessions,
            self.voice_sessions,
            self.router_sessions,
        )
        if min(counts) < self.clients or max(counts) > 20_000:
            problems.append("every session count must be from --clients to 20,000")
        if not 1 <= self.rounds <= 9:
            problems.append("--rounds must be 1..9")
        if not 0 < self.token_rate <= 1000 or self.answer_tokens < 2:
            problems.append("--token-rate must be in (0, 1000] and --answer-tokens >= 2")
        if any(arg.startswith(("--store", "--workers")) for arg in self.worker_args):
            problems.append("--store and --workers are set by the benchmark")
        return problems

    def streaming(self, sessions: int) -> StreamLoadConfig:
        """The streaming load: answers back to back at ``token_rate``, never interrupted."""
        return StreamLoadConfig(
            quick=self.quick,
            report=self.report,
            worker_args=self.worker_args,
            warmup=self.warmup,
            duration=self.duration,
            clients=self.clients,
            connect_concurrency=self.connect_concurrency,
            drain=self.drain,
            sessions=sessions,
            decode_rate=self.token_rate,
            answer_tokens=self.answer_tokens,
            interrupt_every=0,
            interrupt_after=1,
            ping_interval=0.0,
            phases=("stream",),
        )

    def voice(self, store_url: str) -> VoiceConfig:
        """loadtest.voice's load (real-time audio in, paced audio answers out), one rung."""
        flags = [
            f"--sessions={self.voice_sessions}",
            f"--warmup={self.warmup}",
            f"--duration={self.duration}",
            "--bare-duration=0",
            f"--clients={self.clients}",
            f"--report={self.report}",
            *(f"--worker-arg={arg}" for arg in [*self.worker_args, f"--store={store_url}"]),
        ]
        return resolve_voice(voice_parser().parse_args(flags))


def build_parser() -> argparse.ArgumentParser:
    """Flags; defaults of ``None`` are filled from the full or the quick profile."""
    p = benchmark_parser(
        "capacity",
        "Memory and CPU per idle, detached, streaming and voice session on one worker "
        "(Redis store), Redis commands and bytes per token, session start and resume, "
        "router CPU per relayed frame and memory per relayed connection; repeated rounds, "
        "medians and spreads. The figures behind docs/CAPACITY.md.",
    )
    p.add_argument("--quick", action="store_true", help="small sessions counts, one round")
    p.add_argument("--idle-sessions", type=int, help="idle, then detached sessions (full: 2000)")
    p.add_argument("--streaming-sessions", type=int, help="streaming sessions (full: 300)")
    p.add_argument("--voice-sessions", type=int, help="voice sessions (full: 40)")
    p.add_argument("--router-sessions", type=int, help="idle sessions via the router (full: 1000)")
    p.add_argument("--warmup", type=float, help="seconds of load before measuring (full: 3)")
    p.add_argument("--duration", type=float, help="seconds measured per phase (full: 10)")
    p.add_argument("--rounds", type=int, help="measurements of every phase (full: 3)")
    p.add_argument(
        "--token-rate", type=float, default=30.0, help="tokens/s per streaming answer (30)"
    )
    p.add_argument("--answer-tokens", type=int, default=200, help="tokens per answer (200)")
    add_load_flags(p, drain=5.0)
    add_report_flags(
        p, "extra flag for every wsserver serve, e.g. --worker-arg=--heartbeat-interval=5"
    )
    return p


def resolve_config(args: argparse.Namespace) -> CapacityConfig:
    """Apply the profile, then explicit flags; validate bounds."""
    pick = pick_profile(args, FULL, QUICK)
    return CapacityConfig(
        idle_sessions=int(pick["idle_sessions"]),
        streaming_sessions=int(pick["streaming_sessions"]),
        voice_sessions=int(pick["voice_sessions"]),
        router_sessions=int(pick["router_sessions"]),
        warmup=float(pick["warmup"]),
        duration=float(pick["duration"]),
        rounds=int(pick["rounds"]),
        token_rate=args.token_rate,
        answer_tokens=args.answer_tokens,
        report=report_path(args, "capacity"),
        **load_flags(args),
    ).validated("capacity")
