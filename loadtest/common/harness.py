"""What the benchmark entry points share: SIGTERM as an exit, a log folder, the report."""

from __future__ import annotations

import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from loadtest.common.config import BenchmarkConfig
from loadtest.common.environment import environment
from loadtest.common.report import Figure, write_json


def _terminate_on_sigterm() -> None:
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def run_benchmark(
    benchmark: str,
    config: BenchmarkConfig,
    *,
    run: Callable[[Path], dict[str, Any]],
    figures_of: Callable[[dict[str, Any]], list[Figure]],
    warnings_of: Callable[[dict[str, Any]], list[str]],
    print_summary: Callable[[dict[str, Any], list[Figure]], None],
    git_before_run: bool = False,
) -> int:
    """Run with a temporary log folder, then print the summary and write the JSON report.

    ``run`` gets the log folder and returns the results. With ``git_before_run``
    the report names the tree as it was before the run (the commit under test:
    others may change the tree meanwhile) and adds ``git_after_run`` when it
    changed; without, the tree as it is after the run.
    """
    _terminate_on_sigterm()
    started = datetime.now().isoformat(timespec="seconds")
    env = environment() if git_before_run else None
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"bench-{benchmark}-") as log_dir:
        results = run(Path(log_dir))
    elapsed_s = round(time.monotonic() - began, 1)
    if env is None:
        env = environment()
    else:
        git_after = environment()["git"]
        if git_after != env["git"]:
            env["git_after_run"] = git_after
    figures = figures_of(results)
    report = {
        "benchmark": benchmark,
        "started_at": started,
        "elapsed_s": elapsed_s,
        "config": {**asdict(config), "report": str(config.report)},
        "environment": env,
        "figures": [f.to_dict() for f in figures],
        "results": results,
        "warnings": warnings_of(results),
    }
    print_summary(report, figures)
    write_json(config.report, report)
    print(f"\nreport: {config.report}")
    return 0
