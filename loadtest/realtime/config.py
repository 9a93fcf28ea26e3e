"""What one run of ``python -m loadtest.realtime`` measures, from its flags."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from loadtest.common.config import (
    BenchmarkConfig,
    add_report_flags,
    benchmark_parser,
    pick_profile,
    report_path,
)
from loadtest.common.servers import REPO_ROOT

FULL = {"sessions": 32, "rounds": 5, "sdk_turns": 10}
QUICK = {"sessions": 4, "rounds": 2, "sdk_turns": 2}
SDK_ENV = "WSSERVER_OPENAI_SDK_PYTHON"


@dataclass(frozen=True, slots=True, kw_only=True)
class RealtimeBenchConfig(BenchmarkConfig):
    """N concurrent sessions per dialect, ``rounds`` answers and cancels each."""

    sessions: int
    rounds: int
    decode_rate: float
    answer_tokens: int
    cancel_after: int
    """Text deltas a client reads before it sends ``response.cancel``."""
    sdk_turns: int
    sdk_python: str
    """The unmodified openai SDK's Python ('' when there is none: no SDK sample)."""

    def problems(self) -> list[str]:
        """What the run refuses."""
        problems = super(RealtimeBenchConfig, self).problems()
        if not 1 <= self.sessions <= 512 or not 1 <= self.rounds <= 100:
            problems.append("--sessions must be 1..512 and --rounds 1..100")
        if not 1 <= self.cancel_after < self.answer_tokens:
            problems.append("--cancel-after must be >= 1 and below --answer-tokens")
        if self.decode_rate <= 0 or self.sdk_turns < 0:
            problems.append("--decode-rate must be > 0 and --sdk-turns >= 0")
        return problems


def default_sdk_python() -> str:
    """``$WSSERVER_OPENAI_SDK_PYTHON``, else ``.venv-openai-sdk`` beside the repo, if there."""
    named = os.environ.get(SDK_ENV)
    path = Path(named) if named else REPO_ROOT / ".venv-openai-sdk" / "bin" / "python"
    return str(path) if path.exists() else ""


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    p = benchmark_parser("realtime", __doc__)
    p.description = (
        "TTFT and cancel -> response.done over /v1/realtime against the native protocol, "
        "same worker, same run, same websockets client stack; plus a small sample with "
        "the unmodified openai SDK."
    )
    p.add_argument("--quick", action="store_true", help="a handful of sessions (~10 s)")
    p.add_argument("--sessions", type=int, help="concurrent sessions per dialect (full: 32)")
    p.add_argument("--rounds", type=int, help="answers and cancels per session (full: 5)")
    p.add_argument("--decode-rate", type=float, default=100.0, help="tokens/s per answer")
    p.add_argument("--answer-tokens", type=int, default=30, help="tokens per answer")
    p.add_argument(
        "--cancel-after", type=int, default=3, help="text deltas read before response.cancel"
    )
    p.add_argument("--sdk-turns", type=int, help="answers and cancels with the SDK (full: 10)")
    p.add_argument(
        "--sdk-python",
        default=None,
        help=f"Python with openai[realtime] (default: ${SDK_ENV} or .venv-openai-sdk)",
    )
    add_report_flags(p, "extra flag for wsserver serve (repeatable)")
    return p


def resolve_config(args: argparse.Namespace) -> RealtimeBenchConfig:
    """The profile, then the explicit flags."""
    profile = pick_profile(args, FULL, QUICK)
    return RealtimeBenchConfig(
        quick=args.quick,
        report=report_path(args, "realtime"),
        worker_args=list(args.worker_arg),
        sessions=int(profile["sessions"]),
        rounds=int(profile["rounds"]),
        decode_rate=args.decode_rate,
        answer_tokens=args.answer_tokens,
        cancel_after=args.cancel_after,
        sdk_turns=int(profile["sdk_turns"]),
        sdk_python=default_sdk_python() if args.sdk_python is None else args.sdk_python,
    ).validated("realtime")
