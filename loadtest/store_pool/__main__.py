"""Store connection benchmark: ``--store-max-connections`` against no limit, in one run.

``python -m loadtest.store_pool`` starts a fresh ``redis-server`` on a free loopback
port, then, per round and per limit (0, then LIMIT; the order alternates), a fresh
``wsserver serve`` on it. N sessions start at once from the client processes, their
connections drop, and all resume at once. It prints the limited worker's figures beside
the unlimited one's, with the ratio: the worker's Redis connections after the starts and
after the resumes, starts/s, resumes/s and resume latency. See ``loadtest/README.md``.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadtest.common.clients import raise_fd_limit
from loadtest.common.harness import run_benchmark
from loadtest.common.redis_process import RedisProcess
from loadtest.common.report import Figure, format_table
from loadtest.store_pool.config import StorePoolConfig, build_parser, resolve_config
from loadtest.store_pool.phases import measure_rounds

_FIGURES = [
    ("Redis connections after the starts", "connections", ("store_connections_after_starts",)),
    ("Redis connections after the resumes", "connections", ("store_connections_after_resumes",)),
    ("session starts/s", "sessions/s", ("starts_per_s",)),
    ("resumes/s", "sessions/s", ("resumes_per_s",)),
    ("resume p50", "ms", ("resume_ms", "p50")),
    ("resume p99", "ms", ("resume_ms", "p99")),
]


def run(config: StorePoolConfig, log_dir: Path) -> dict[str, Any]:
    """Every round on one redis-server, each worker fresh."""
    with RedisProcess(log_dir) as redis:
        rounds = measure_rounds(config, redis, log_dir)
    return {"rounds": rounds, "median": {k: _medians(v) for k, v in rounds.items()}}


def _medians(rounds: list[dict[str, Any]]) -> dict[str, float | None]:
    """The median over rounds of each figure's value, keyed by the figure's name."""
    medians: dict[str, float | None] = {}
    for name, _unit, keys in _FIGURES:
        values = []
        for result in rounds:
            value: Any = result
            for key in keys:
                value = value[key]
            if value is not None:
                values.append(float(value))
        medians[name] = statistics.median(values) if values else None
    return medians


def build_figures(config: StorePoolConfig, results: dict[str, Any]) -> list[Figure]:
    """The limited worker's figures beside the unlimited one's (medians over rounds)."""
    limited, unlimited = results["median"]["limited"], results["median"]["unlimited"]
    base = "no limit (0)"
    return [Figure(name, unit, limited[name], base, unlimited[name]) for name, unit, _ in _FIGURES]


def warnings_of(config: StorePoolConfig, results: dict[str, Any]) -> list[str]:
    """Sessions that did not start or resume, and what the workers logged."""
    warnings = []
    for key, rounds in results["rounds"].items():
        for index, result in enumerate(rounds):
            where = f"{key} worker, round {index + 1}"
            if result["sessions_opened"] < config.sessions:
                warnings.append(f"{where}: sessions failed to start: {result['start_failures']}")
            if result["sessions_resumed"] < result["sessions_opened"]:
                warnings.append(f"{where}: resumes failed: {result['resume_failures']}")
            if result["worker_log_warnings"].get("count"):
                warnings.append(f"{where}: worker logged {result['worker_log_warnings']}")
    return warnings


def print_summary(config: StorePoolConfig, report: dict[str, Any], figures: list[Figure]) -> None:
    """The table, then the warnings."""
    print()
    print(f"{config.sessions} sessions started, dropped and resumed at once")
    print(format_table(figures, value_header=f"--store-max-connections {config.limit}"))
    for warning in report["warnings"]:
        print(f"warning: {warning}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    config = resolve_config(build_parser().parse_args(argv))
    raise_fd_limit()  # inherited by the worker (its client processes raise their own)
    return run_benchmark(
        "store_pool",
        config,
        run=lambda log_dir: run(config, log_dir),
        figures_of=lambda results: build_figures(config, results),
        warnings_of=lambda results: warnings_of(config, results),
        print_summary=lambda report, figures: print_summary(config, report, figures),
        git_before_run=True,
    )


if __name__ == "__main__":
    sys.exit(main())
