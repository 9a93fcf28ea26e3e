"""Store benchmark: the Redis session store against the memory store, in one run.

``python -m loadtest.store`` starts a fresh ``redis-server`` on a free
loopback port and ``wsserver serve`` workers as subprocesses, and measures:

1. the streaming load of :mod:`loadtest.stream` (N sessions) on a worker
   with ``--store memory`` and then on one with ``--store redis://…``:
   delivered tokens/s, CPU per token, Redis round trips per token, at an
   unsaturated decode rate and at a saturating one;
2. a reconnect storm: K sessions stream on worker A, every connection drops at
   once, and every session resumes at once on worker B (a takeover through the
   shared Redis), against the same storm resuming on A itself: drop ->
   ``session.ready`` p50/p99, and lost / doubled events per session.

It prints every figure beside its same-run baseline and the ratio, and writes
a JSON report. See ``loadtest/README.md`` for what each figure means.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadtest.common.clients import raise_fd_limit
from loadtest.common.harness import run_benchmark
from loadtest.common.redis_process import RedisProcess
from loadtest.store.config import StoreBenchConfig, build_parser, resolve_config
from loadtest.store.figures import build_figures, print_summary, store_warnings
from loadtest.store.phases import measure_stream_rounds
from loadtest.store.storm_runner import measure_storm


def run(config: StoreBenchConfig, log_dir: Path) -> dict[str, Any]:
    """Every part against one redis-server, each worker fresh and stopped right after."""
    results: dict[str, Any] = {}
    with RedisProcess(log_dir) as redis:
        if "stream" in config.phases:
            rates = [config.decode_rate]
            if config.saturation_rate:
                rates.append(config.saturation_rate)
            results["stream"], results["stream_rounds"] = {}, {}
            for rate in rates:
                chosen, rounds = measure_stream_rounds(config, redis, log_dir, rate)
                results["stream"][f"{rate:g}"] = chosen
                results["stream_rounds"][f"{rate:g}"] = rounds
        if "storm" in config.phases:
            results["storm"] = {
                "in_place": measure_storm(config, redis, log_dir, takeover=False),
                "takeover": measure_storm(config, redis, log_dir, takeover=True),
            }
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    config = resolve_config(build_parser().parse_args(argv))
    fd_limit = raise_fd_limit()  # inherited by the servers and the clients
    needed = 2 * max(config.sessions, config.storm_sessions) + 1024
    if fd_limit < needed:
        print(f"warning: open-files limit {fd_limit} is low (want {needed})", file=sys.stderr)
    return run_benchmark(
        "store",
        config,
        run=lambda log_dir: run(config, log_dir),
        figures_of=lambda results: build_figures(config, results),
        warnings_of=lambda results: store_warnings(config, results),
        print_summary=lambda report, figures: print_summary(config, report, figures),
        git_before_run=True,  # the commit under test, read before the run: the tree may change
    )


if __name__ == "__main__":
    sys.exit(main())
