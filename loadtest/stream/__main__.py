"""Streaming benchmark: the worker against a bare websockets server, in one run.

``python -m loadtest.stream`` starts ``wsserver serve`` and
:mod:`loadtest.stream.bare_server` as subprocesses on free loopback ports, drives them
from separate client processes, and measures, for each server in turn:

1. delivered tokens/s with N concurrent streaming sessions;
2. interrupt latency (``response.interrupt`` sent -> ``response.done``
   received) and ping round trips under that load;
3. RSS per idle session, from K idle sessions.

It prints every figure beside its baseline and the ratio, and writes a JSON
report. See ``loadtest/README.md`` for what each figure means.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadtest.common.clients import raise_fd_limit
from loadtest.common.harness import run_benchmark
from loadtest.common.servers import tail_on_error
from loadtest.common.stream_load import measure_streaming, warnings_for
from loadtest.stream.config import StreamConfig, build_parser, resolve_config
from loadtest.stream.figures import build_figures, print_summary
from loadtest.stream.phases import measure_idle, start_server

SERVERS = ("worker", "bare")


def run(config: StreamConfig, log_dir: Path) -> dict[str, dict[str, Any]]:
    """Each phase against each server, each server fresh and stopped right after."""
    measure = {"stream": measure_streaming, "idle": measure_idle}
    results: dict[str, dict[str, Any]] = {}
    for phase in config.phases:
        results[phase] = {}
        for name in SERVERS:
            print(f"[{phase}] {name} ...", flush=True)
            with start_server(name, config, log_dir) as server, tail_on_error(server):
                results[phase][name] = measure[phase](server, config)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    config = resolve_config(build_parser().parse_args(argv))
    fd_limit = raise_fd_limit()  # inherited by the servers and the clients
    if "idle" in config.phases and fd_limit < config.idle_sessions + 1024:
        print(
            f"warning: open-files limit {fd_limit} is low for {config.idle_sessions} idle "
            "sessions; raise the hard limit (ulimit -Hn) or expect connect failures",
            file=sys.stderr,
        )
    return run_benchmark(
        "stream",
        config,
        run=lambda log_dir: run(config, log_dir),
        figures_of=build_figures,
        warnings_of=lambda results: warnings_for(config, results),
        print_summary=lambda report, figures: print_summary(config, report, figures),
    )


if __name__ == "__main__":
    sys.exit(main())
