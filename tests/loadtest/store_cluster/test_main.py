"""``python -m loadtest.store_cluster``: the smallest real run, and its report's shape.

Correctness of the report, never speed: both phases streamed every token they were
asked for, through a real worker on a real single Redis and a real Redis Cluster.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.processes import ROOT, cli_env


def test_a_small_run_measures_both_stores(tmp_path: Path) -> None:
    report_path = tmp_path / "store_cluster.json"
    argv = ["--sessions", "4", "--rounds", "1", "--answer-tokens", "30", "--decode-rate", "300"]
    run = subprocess.run(
        [sys.executable, "-m", "loadtest.store_cluster", *argv, "--report", str(report_path)],
        cwd=ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "Redis round trips per token" in run.stdout
    report = json.loads(report_path.read_text())
    assert report["benchmark"] == "store_cluster"
    for name in ("single", "cluster"):
        phase = report[name]
        assert phase["store"] == name
        assert (phase["tokens"], phase["failed_sessions"]) == (4 * 30, 0)
        assert 0 < phase["frames"] <= phase["tokens"]  # a lagging client's deltas merge
        # Every token's events went to Redis: some round trips, some commands.
        assert phase["round_trips"] > 0 and phase["redis_commands"] > phase["round_trips"]
        assert phase["round_trips_per_token"] == round(phase["round_trips"] / phase["tokens"], 4)
    assert set(report["ratios"]) == {
        "tokens_per_s",
        "round_trips_per_token",
        "redis_commands_per_token",
        "worker_cpu_per_token",
    }
