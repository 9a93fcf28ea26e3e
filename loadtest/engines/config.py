"""Settings of one engines benchmark run: the full and quick profiles, its own flags."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from loadtest.common.config import (
    BenchmarkConfig,
    add_report_flags,
    benchmark_parser,
    pick_profile,
    report_path,
)

FULL = {
    "sessions": 4,
    "questions": 4,
    "max_tokens": 48,
    "interrupts": 8,
    "voice_sessions": 2,
}
QUICK = {"sessions": 2, "questions": 1, "max_tokens": 12, "interrupts": 2, "voice_sessions": 1}

PHASES = ("text", "interrupt", "voice")

QUESTIONS = (
    "What is a websocket?",
    "Name three colours of the rainbow.",
    "Why is the sky blue?",
    "What do bees make?",
    "How many legs does a spider have?",
    "What is the capital of France?",
)
"""What the text sessions ask, in turn (the same list on both paths)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EnginesConfig(BenchmarkConfig):
    """N sessions of Q questions on both paths, K interrupts, V voice sessions."""

    sessions: int
    questions: int
    max_tokens: int
    interrupts: int
    interrupt_after: int
    voice_sessions: int
    threads: int
    phases: tuple[str, ...]

    def problems(self) -> list[str]:
        """What the engines benchmark refuses."""
        problems = super(EnginesConfig, self).problems()
        if not 1 <= self.sessions <= 32 or not 1 <= self.questions <= 100:
            problems.append("--sessions must be 1..32 and --questions 1..100")
        if not 2 <= self.max_tokens <= 1024:
            problems.append("--max-tokens must be 2..1024")
        if self.interrupts < 0 or not 1 <= self.interrupt_after < self.max_tokens:
            problems.append("--interrupts must be >= 0 and --interrupt-after in 1..max-tokens")
        if not 0 <= self.voice_sessions <= 8 or not 1 <= self.threads <= 16:
            problems.append("--voice-sessions must be 0..8 and --threads 1..16")
        return problems


def build_parser() -> argparse.ArgumentParser:
    """Flags; defaults of ``None`` are filled from the full or the quick profile."""
    p = benchmark_parser(
        "engines",
        "The local engine (llama.cpp, SmolLM2) through the worker vs called directly: TTFT, "
        "tokens/s, the worker's added latency, interrupt -> upstream idle, voice time to "
        "first audio.",
    )
    p.add_argument("--quick", action="store_true", help="small run (2 sessions, 12 tokens)")
    p.add_argument("--sessions", type=int, help="concurrent text sessions (full: 4)")
    p.add_argument("--questions", type=int, help="questions per session, in turn (full: 4)")
    p.add_argument("--max-tokens", type=int, help="output cap per answer (full: 48)")
    p.add_argument("--interrupts", type=int, help="answers interrupted, one at a time (full: 8)")
    p.add_argument(
        "--interrupt-after", type=int, default=None, help="deltas received before interrupting"
    )
    p.add_argument("--voice-sessions", type=int, help="concurrent voice sessions (full: 2)")
    p.add_argument("--threads", type=int, default=1, help="llama.cpp CPU threads (default 1)")
    p.add_argument("--only", choices=PHASES, action="append", help="run only these phases")
    add_report_flags(p, "extra flag for wsserver serve (repeatable)")
    return p


def resolve_config(args: argparse.Namespace) -> EnginesConfig:
    """Apply the profile, then explicit flags; validate bounds."""
    pick = pick_profile(args, FULL, QUICK)
    max_tokens = int(pick["max_tokens"])
    return EnginesConfig(
        quick=args.quick,
        sessions=int(pick["sessions"]),
        questions=int(pick["questions"]),
        max_tokens=max_tokens,
        interrupts=int(pick["interrupts"]),
        interrupt_after=args.interrupt_after or max(1, max_tokens // 4),
        voice_sessions=int(pick["voice_sessions"]),
        threads=args.threads,
        phases=tuple(args.only) if args.only else PHASES,
        report=report_path(args, "engines"),
        worker_args=list(args.worker_arg),
    ).validated("engines")
