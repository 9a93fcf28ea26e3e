"""Router benchmark: the worker reached directly against through ``wsserver router``, in one run.

``python -m loadtest.router`` starts a ``redis-server``, and for each phase a
fresh ``wsserver serve --store redis://…`` worker (the stream bench's flags, in the
worker registry) and, for the routed half, a fresh ``wsserver router`` in front of
it, all on free loopback ports. With the same client load on both it measures:

1. delivered tokens/s with N concurrent streaming sessions (loadtest.stream's load),
   router / direct;
2. the router's added latency: app-level ``ping`` -> ``pong`` round trips p50/p99
   direct and through the router, under that load and with the worker idle, and
   their difference;
3. the router's CPU per relayed delta frame and per token (psutil on its pid).

It prints every figure beside its same-run direct baseline, with the difference and
the ratio, and writes a JSON report. ``--storm`` runs a reconnect storm instead
(:mod:`loadtest.router.storm`). See ``loadtest/README.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

from loadtest.common.clients import raise_fd_limit
from loadtest.common.harness import run_benchmark
from loadtest.common.redis_process import RedisProcess
from loadtest.router.config import RouterBenchConfig, build_parser, resolve_config
from loadtest.router.figures import added_latency, build_figures, print_summary, router_warnings
from loadtest.router.phases import measure_idle_one, measure_pair, measure_stream_one
from loadtest.router.storm import print_storm, run_storm, storm_broken, storm_figures


def run(config: RouterBenchConfig, log_dir: Path) -> dict[str, Any]:
    """Every phase against one redis-server; each phase's worker and router fresh."""
    results: dict[str, Any] = {"rounds": {}}
    with RedisProcess(log_dir) as redis:
        if "idle" in config.phases:
            results["idle"], results["rounds"]["idle"] = measure_pair(
                config, partial(measure_idle_one, config, redis, log_dir)
            )
        if "stream" in config.phases:
            results["stream"] = {}
            for rate in config.rates:
                key = f"{rate:g}"
                results["stream"][key], results["rounds"][f"stream@{key}/s"] = measure_pair(
                    config, partial(measure_stream_one, config, redis, log_dir, rate)
                )
    results["router_added_ping_ms"] = added_latency(results)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    config = resolve_config(build_parser().parse_args(argv))
    fd_limit = raise_fd_limit()  # inherited by the worker, the router and the clients
    needed = 3 * config.sessions + 1024  # the router holds two sockets per session
    if fd_limit < needed:
        print(f"warning: open-files limit {fd_limit} is low (want {needed})", file=sys.stderr)
    if config.storm:
        return storm(config)
    return run_benchmark(
        "router",
        # run_benchmark only serialises the config (a dataclass) and reads .report.
        cast(Any, config),
        run=lambda log_dir: run(config, log_dir),
        figures_of=build_figures,
        warnings_of=lambda results: router_warnings(config, results),
        print_summary=lambda report, figures: print_summary(config, report, figures),
        git_before_run=True,  # the commit under test, read before the run: the tree may change
    )


def storm(config: RouterBenchConfig) -> int:
    """``--storm``: exit status 1 when a session lost or doubled events or did not resume."""
    kept: dict[str, Any] = {}

    def run_kept(log_dir: Path) -> dict[str, Any]:
        kept.update(run_storm(config, log_dir))
        return kept

    run_benchmark(
        "router-storm",
        cast(Any, config),
        run=run_kept,
        figures_of=storm_figures,
        warnings_of=storm_broken,
        print_summary=print_storm,
        git_before_run=True,
    )
    return 1 if storm_broken(kept) else 0


if __name__ == "__main__":
    sys.exit(main())
