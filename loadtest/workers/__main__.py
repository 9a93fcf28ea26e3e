"""Workers benchmark: ``wsserver serve --workers N`` against one process, in one run.

``python -m loadtest.workers`` starts a fresh ``redis-server`` on a free loopback
port and runs the streaming load of :mod:`loadtest.stream` (N sessions asking for
answers back to back, some interrupted) on ``wsserver serve --workers 1`` and on
``--workers N`` (default 2), both on that Redis: delivered tokens/s, the server's
CPU (every process of the group), CPU per token, interrupt and ping latency. It
prints each figure of the group beside the one process's, with the ratio, and
writes a JSON report. See ``loadtest/README.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadtest.common.clients import raise_fd_limit
from loadtest.common.harness import run_benchmark
from loadtest.common.redis_process import RedisProcess
from loadtest.common.report import Figure, compared, format_table
from loadtest.common.stream_load import warnings_for
from loadtest.workers.config import WorkersBenchConfig, build_parser, resolve_config
from loadtest.workers.phases import measure_rounds


def run(config: WorkersBenchConfig, log_dir: Path) -> dict[str, Any]:
    """Both worker counts against one redis-server, each server fresh."""
    with RedisProcess(log_dir) as redis:
        chosen, rounds = measure_rounds(config, redis, log_dir)
    return {"stream": chosen, "rounds": rounds}


def build_figures(config: WorkersBenchConfig, results: dict[str, Any]) -> list[Figure]:
    """The group's figures beside the single process's."""
    group, one = results["stream"][str(config.workers)], results["stream"]["1"]
    base = "--workers 1"
    at = f"{group['sessions_opened']} sessions @{config.decode_rate:g}/s"
    figures = [
        compared(f"delivered tokens/s, {at}", "tokens/s", base, group, one, "tokens_per_s"),
        compared(
            "server CPU (all its processes)",
            "% of core",
            base,
            group,
            one,
            "cpu",
            "server_pct_of_core",
        ),
        compared(
            "server CPU per delivered token", "us", base, group, one, "server_cpu_us_per_token"
        ),
        compared("redis-server CPU", "% of core", base, group, one, "cpu", "redis_pct_of_core"),
        compared(
            "server processes (parent and workers)", "processes", base, group, one, "processes"
        ),
    ]
    for q in ("p50", "p99"):
        figures.append(compared(f"interrupt->done {q}", "ms", base, group, one, "interrupt_ms", q))
        figures.append(compared(f"ping RTT {q}", "ms", base, group, one, "ping_ms", q))
    return figures


def print_summary(
    config: WorkersBenchConfig, report: dict[str, Any], figures: list[Figure]
) -> None:
    """The table, then the warnings."""
    print()
    print(format_table(figures, value_header=f"--workers {config.workers}"))
    for warning in report["warnings"]:
        print(f"warning: {warning}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    config = resolve_config(build_parser().parse_args(argv))
    fd_limit = raise_fd_limit()
    if fd_limit < 2 * config.sessions + 1024:
        print(f"warning: open-files limit {fd_limit} is low", file=sys.stderr)
    return run_benchmark(
        "workers",
        config,
        run=lambda log_dir: run(config, log_dir),
        figures_of=lambda results: build_figures(config, results),
        warnings_of=lambda results: warnings_for(
            config, {"stream": {f"workers-{n}": r for n, r in results["stream"].items()}}
        ),
        print_summary=lambda report, figures: print_summary(config, report, figures),
        git_before_run=True,
    )


if __name__ == "__main__":
    sys.exit(main())
