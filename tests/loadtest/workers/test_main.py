"""``python -m loadtest.workers``: a tiny real run, a report with the group/one ratio."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.processes import ROOT, cli_env


def test_a_tiny_run_reports_both_worker_counts_and_the_ratio(tmp_path: Path) -> None:
    report = tmp_path / "workers.json"
    flags = ["--sessions", "10", "--warmup", "0.5", "--duration", "1.5", "--clients", "1"]
    flags += ["--answer-tokens", "20", "--drain", "2"]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadtest.workers",
            *flags,
            "--rounds",
            "1",
            "--report",
            str(report),
        ],
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(report.read_text())
    stream = data["results"]["stream"]
    # The group really ran as a parent and two workers, the baseline as one process.
    assert (stream["1"]["processes"], stream["2"]["processes"]) == (1, 3)
    for run in stream.values():
        assert run["sessions_opened"] == 10
        assert run["tokens_per_s"] > 0
        assert run["cpu"]["server_pct_of_core"] > 0
    figures = {f["name"].split(",")[0]: f for f in data["figures"]}
    delivered = figures["delivered tokens/s"]
    assert delivered["baseline_name"] == "--workers 1"
    assert delivered["ratio"] == round(delivered["value"] / delivered["baseline"], 3)
