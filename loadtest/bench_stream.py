"""Streaming benchmark: the worker against a bare websockets server, in one run.

``python -m loadtest.bench_stream`` starts ``wsserver serve`` and
:mod:`loadtest.bare_server` as subprocesses on free loopback ports, drives them
from separate client processes, and measures, for each server in turn:

1. delivered tokens/s with N concurrent streaming sessions;
2. interrupt latency (``response.interrupt`` sent -> ``response.done``
   received) and ping round trips under that load;
3. RSS per idle session, from K idle sessions.

It prints every figure beside its baseline and the ratio, and writes a JSON
report. See ``loadtest/README.md`` for what each figure means.
"""

from __future__ import annotations

import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from loadtest.clients import raise_fd_limit
from loadtest.config import BenchConfig, build_parser, resolve_config
from loadtest.figures import build_figures, environment, print_summary, warnings_for
from loadtest.phases import measure_idle, measure_streaming, start_server
from loadtest.report import write_json

SERVERS = ("worker", "bare")


def run(config: BenchConfig, log_dir: Path) -> dict[str, dict[str, Any]]:
    """Each phase against each server, each server fresh and stopped right after."""
    measure = {"stream": measure_streaming, "idle": measure_idle}
    results: dict[str, dict[str, Any]] = {}
    for phase in config.phases:
        results[phase] = {}
        for name in SERVERS:
            print(f"[{phase}] {name} ...", flush=True)
            with start_server(name, config, log_dir) as server:
                try:
                    results[phase][name] = measure[phase](server, config)
                except Exception:
                    print(f"{name} server log (tail):\n{server.log_tail()}", file=sys.stderr)
                    raise
    return results


def _terminate_on_sigterm() -> None:
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


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
    _terminate_on_sigterm()
    started = datetime.now().isoformat(timespec="seconds")
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as log_dir:
        results = run(config, Path(log_dir))
    figures = build_figures(results)
    report = {
        "benchmark": "stream",
        "started_at": started,
        "elapsed_s": round(time.monotonic() - began, 1),
        "config": {**asdict(config), "report": str(config.report)},
        "environment": environment(),
        "figures": [f.to_dict() for f in figures],
        "results": results,
        "warnings": warnings_for(config, results),
    }
    print_summary(config, report, figures)
    write_json(config.report, report)
    print(f"\nreport: {config.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
