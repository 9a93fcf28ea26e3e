"""Settings of one store connection benchmark run: profiles, flags, validation."""

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

FULL = {"sessions": 2000, "rounds": 2}
QUICK = {"sessions": 200, "rounds": 1}


@dataclass(frozen=True, slots=True, kw_only=True)
class StorePoolConfig(BenchmarkConfig):
    """The same storm of starts and resumes on a worker without and with a limit."""

    sessions: int
    rounds: int
    """Measurements per limit, in alternating order."""
    limit: int
    """``--store-max-connections`` of the limited worker."""
    clients: int
    concurrency: int
    """Sessions each client process opens (and resumes) at once."""

    def problems(self) -> list[str]:
        """What this benchmark refuses."""
        problems = []
        if not 1 <= self.rounds <= 5:
            problems.append("--rounds must be 1..5")
        if not 1 <= self.clients <= 16:
            problems.append("--clients must be 1..16")
        if self.sessions < self.clients or self.sessions > 20_000:
            problems.append("--sessions must be from --clients to 20,000")
        if not 1 <= self.limit <= 10_000:
            problems.append("--limit must be 1..10,000")
        if not 1 <= self.concurrency <= 2_000:
            problems.append("--concurrency must be 1..2,000")
        if any(arg.startswith(("--store", "--workers")) for arg in self.worker_args):
            problems.append("--store, --store-max-connections and --workers are set here")
        return problems


def build_parser() -> argparse.ArgumentParser:
    """Flags; defaults of ``None`` are filled from the full or the quick profile."""
    p = benchmark_parser(
        "store_pool",
        "A worker's Redis connections, session starts and resumes under a storm, with "
        "--store-max-connections LIMIT against no limit (0), in one run.",
    )
    p.add_argument("--quick", action="store_true", help="small run (200 sessions, one round)")
    p.add_argument("--sessions", type=int, help="sessions per storm (full: 2000, quick: 200)")
    p.add_argument("--rounds", type=int, help="runs per limit (full: 2, quick: 1)")
    p.add_argument("--limit", type=int, default=8, help="the limited worker's connections")
    p.add_argument("--clients", type=int, default=2, help="client processes")
    p.add_argument("--concurrency", type=int, default=500, help="sessions a client opens at once")
    add_report_flags(p, "extra flag for every wsserver serve, e.g. --worker-arg=--engine-slots=4")
    return p


def resolve_config(args: argparse.Namespace) -> StorePoolConfig:
    """Apply the profile, then explicit flags; validate bounds."""
    pick = pick_profile(args, FULL, QUICK)
    return StorePoolConfig(
        quick=args.quick,
        sessions=int(pick["sessions"]),
        rounds=int(pick["rounds"]),
        limit=args.limit,
        clients=args.clients,
        concurrency=args.concurrency,
        report=report_path(args, "store_pool"),
        worker_args=list(args.worker_arg),
    ).validated("store_pool")
