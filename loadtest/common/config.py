"""The configuration every benchmark shares: base settings, base flags, the report path.

Each benchmark's own configuration extends one of the dataclasses below with only its
own fields, and its parser starts from :func:`benchmark_parser` and ends with
:func:`add_report_flags`:

- :class:`BenchmarkConfig`: every benchmark (profile, report path, extra worker flags);
- :class:`LoadConfig`: a load from client processes measured in a window (stream, store,
  router, voice);
- :class:`StreamLoadConfig`: the streaming load itself, N sessions asking for answers
  back to back, some interrupted (stream, store, router).
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Self, TypedDict

from loadtest.common.servers import REPO_ROOT

PREFILL_MS = 20.0  # the simulated engine's fixed prefill base (prefill_base_s)

REPORTS = REPO_ROOT / "loadtest" / "reports"
"""Where every benchmark writes its report unless ``--report`` says otherwise."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchmarkConfig:
    """What every benchmark run has, after ``--quick`` and explicit flags are applied."""

    quick: bool = False
    report: Path = field(default_factory=Path)
    worker_args: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """What the settings refuse, in words (each benchmark adds its own)."""
        return []

    def validated(self, benchmark: str) -> Self:
        """This configuration, or a ``SystemExit`` naming every problem found."""
        problems = self.problems()
        if problems:
            raise SystemExit(f"loadtest.{benchmark}: " + "; ".join(problems))
        return self


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadConfig(BenchmarkConfig):
    """A load driven by client processes and measured in a window after a warm-up."""

    warmup: float
    duration: float
    clients: int
    connect_concurrency: int
    drain: float

    def problems(self) -> list[str]:
        """What every load refuses in the client processes and the measurement window."""
        problems = super(LoadConfig, self).problems()
        if not 1 <= self.clients <= 16:
            problems.append("--clients must be 1..16")
        if not 0 < self.duration <= 600 or not 0 <= self.warmup <= 120:
            problems.append("--duration must be in (0, 600] and --warmup in [0, 120]")
        return problems


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamLoadConfig(LoadConfig):
    """N sessions asking for answers back to back; every n-th answer is interrupted."""

    sessions: int
    decode_rate: float
    answer_tokens: int
    interrupt_every: int
    interrupt_after: int
    ping_interval: float
    phases: tuple[str, ...]

    def sessions_in(self, phase: str) -> int:
        """How many sessions ``phase`` opens (the streaming load: ``sessions``)."""
        return self.sessions

    def at_rate(self, decode_rate: float, *worker_args: str) -> Self:
        """The same load at another decode rate, on a worker given more flags."""
        return dataclasses.replace(
            self, decode_rate=decode_rate, worker_args=[*self.worker_args, *worker_args]
        )

    def problems(self) -> list[str]:
        """What the streaming load refuses in its answers, interrupts and pings."""
        problems = super(StreamLoadConfig, self).problems()
        if self.answer_tokens < 2 or self.interrupt_after >= self.answer_tokens:
            problems.append("--answer-tokens must be >= 2 and above --interrupt-after")
        if self.ping_interval < 0 or self.interrupt_every < 0 or self.drain < 0:
            problems.append("--ping-interval, --interrupt-every and --drain must be >= 0")
        return problems


def expected_duty(config: StreamLoadConfig) -> float:
    """Share of time a session streams: answers are back to back, some cut short, plus prefill."""
    full = config.answer_tokens / config.decode_rate + PREFILL_MS / 1000
    cut = config.interrupt_after / config.decode_rate + PREFILL_MS / 1000
    share_cut = 1 / config.interrupt_every if config.interrupt_every else 0.0
    tokens = (1 - share_cut) * config.answer_tokens + share_cut * config.interrupt_after
    seconds = (1 - share_cut) * full + share_cut * cut
    return tokens / (seconds * config.decode_rate)


# -- command line -----------------------------------------------------------------


def benchmark_parser(benchmark: str, description: str | None) -> argparse.ArgumentParser:
    """The parser of ``python -m loadtest.<benchmark>``; each benchmark adds its flags."""
    return argparse.ArgumentParser(prog=f"python -m loadtest.{benchmark}", description=description)


def add_window_flags(p: argparse.ArgumentParser, *, quick_help: str, per: str) -> None:
    """The profile and the measured window: ``--quick``, ``--sessions``, ``--warmup``,
    ``--duration`` (defaults of ``None`` are filled from the profile)."""
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.add_argument("--sessions", type=int, help="concurrent streaming sessions (full: 1000)")
    p.add_argument("--warmup", type=float, help="seconds of load before measuring (full: 5)")
    p.add_argument("--duration", type=float, help=f"seconds measured per {per} (full: 20)")


def add_rate_flags(p: argparse.ArgumentParser, *, decode_help: str, saturation_help: str) -> None:
    """An unsaturated decode rate and a second one that saturates the worker."""
    p.add_argument("--decode-rate", type=float, help=decode_help)
    p.add_argument("--saturation-rate", type=float, help=saturation_help)


def add_load_flags(
    p: argparse.ArgumentParser,
    *,
    drain: float = 10.0,
    drain_help: str = "max wait for owed answers (s)",
) -> None:
    """The client processes' flags, alike in every load: processes, handshakes, drain."""
    p.add_argument("--clients", type=int, default=2, help="client processes")
    p.add_argument(
        "--connect-concurrency", type=int, default=32, help="handshakes in flight per client"
    )
    p.add_argument("--drain", type=float, default=drain, help=drain_help)


def add_stream_load_flags(p: argparse.ArgumentParser) -> None:
    """The streaming load's flags: answers, interrupts, pings, then the client processes."""
    p.add_argument("--answer-tokens", type=int, default=100, help="tokens per answer")
    p.add_argument(
        "--interrupt-every", type=int, default=3, help="interrupt every n-th answer (0: never)"
    )
    p.add_argument(
        "--interrupt-after", type=int, help="tokens received before interrupting (half an answer)"
    )
    p.add_argument("--ping-interval", type=float, default=1.0, help="seconds between pings")
    add_load_flags(p)


def add_report_flags(p: argparse.ArgumentParser, worker_arg_help: str | None) -> None:
    """``--report`` and (unless ``worker_arg_help`` is None) the repeatable ``--worker-arg``."""
    p.add_argument("--report", type=Path, help="JSON report path")
    if worker_arg_help is not None:
        p.add_argument(
            "--worker-arg", action="append", default=[], metavar="FLAG", help=worker_arg_help
        )


def pick_profile(
    args: argparse.Namespace, full: dict[str, float], quick: dict[str, float]
) -> dict[str, float]:
    """The quick or the full profile (``--quick``), each value replaced by its flag if given."""
    profile = quick if args.quick else full
    return {k: getattr(args, k) if getattr(args, k) is not None else v for k, v in profile.items()}


def report_path(args: argparse.Namespace, benchmark: str) -> Path:
    """``--report``, else ``loadtest/reports/<benchmark>-<timestamp>.json``."""
    if args.report:
        return Path(args.report)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return REPORTS / f"{benchmark}-{stamp}.json"


class LoadFlags(TypedDict):
    """The values of :func:`add_load_flags`' flags and the shared ones, by field name."""

    clients: int
    connect_concurrency: int
    drain: float
    quick: bool
    worker_args: list[str]


class StreamLoadFlags(LoadFlags):
    """The values of :func:`add_stream_load_flags`' flags, by field name."""

    answer_tokens: int
    interrupt_every: int
    interrupt_after: int
    ping_interval: float


def load_flags(args: argparse.Namespace) -> LoadFlags:
    """The values of the client processes' flags, ``--quick`` and ``--worker-arg``."""
    return LoadFlags(
        clients=args.clients,
        connect_concurrency=args.connect_concurrency,
        drain=args.drain,
        quick=args.quick,
        worker_args=list(args.worker_arg),
    )


def stream_load_flags(args: argparse.Namespace) -> StreamLoadFlags:
    """The streaming load's flag values; ``--interrupt-after`` defaults to half an answer."""
    return StreamLoadFlags(
        **load_flags(args),
        answer_tokens=args.answer_tokens,
        interrupt_every=args.interrupt_every,
        interrupt_after=args.interrupt_after or max(1, args.answer_tokens // 2),
        ping_interval=args.ping_interval,
    )
