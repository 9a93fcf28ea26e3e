"""``python -m loadtest.router --storm``: a tiny real storm, direct and through the router."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.processes import ROOT, cli_env


def test_a_tiny_storm_resumes_every_session_through_the_router(tmp_path: Path) -> None:
    report = tmp_path / "storm.json"
    flags = ["--storm", "--quick", "--sessions", "8", "--clients", "1", "--duration", "4"]
    flags += ["--warmup", "0.5", "--answer-tokens", "40", "--report", str(report)]
    result = subprocess.run(
        [sys.executable, "-m", "loadtest.router", *flags],
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(report.read_text())
    assert data["warnings"] == []
    for target in ("direct", "router"):
        run = data["results"][target]
        # Every session was cut by the storm and resumed, nothing lost or doubled.
        assert run["sessions_opened"] == 8
        assert run["connections_cut"] == 8
        assert run["resume_ready_ms"]["count"] == 8
        assert (run["lost_events"], run["doubled_events"], run["not_resumed"]) == (0, 0, 0)
    # The resumes really crossed the router: its placements count them.
    assert data["results"]["router"]["router_stats"]["connections_relayed"] >= 16
    figures = {f["name"]: f for f in data["figures"]}
    assert figures["cut->session.ready p99"]["baseline_name"] == "direct"
