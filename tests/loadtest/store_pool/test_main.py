"""``python -m loadtest.store_pool``: a small real run, and its report's shape.

Correctness of the report, never speed: every session started and resumed on both
workers, and the limited worker kept within its limit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loadtest.store_pool.config import build_parser, resolve_config
from tests.processes import ROOT, cli_env


def test_a_small_run_measures_both_workers(tmp_path: Path) -> None:
    report_path = tmp_path / "store_pool.json"
    argv = ["--sessions=60", "--rounds=1", "--limit=3", "--clients=1", "--concurrency=60"]
    run = subprocess.run(
        [sys.executable, "-m", "loadtest.store_pool", *argv, f"--report={report_path}"],
        cwd=ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "--store-max-connections 3" in run.stdout
    report = json.loads(report_path.read_text())
    assert report["benchmark"] == "store_pool" and report["warnings"] == [], report["warnings"]
    (limited,) = report["results"]["rounds"]["limited"]
    (unlimited,) = report["results"]["rounds"]["unlimited"]
    for result in (limited, unlimited):
        assert result["sessions_opened"] == result["sessions_resumed"] == 60, result
        assert result["resume_ms"]["count"] == 60
    assert (limited["limit"], unlimited["limit"]) == (3, 0)
    # The store's three at most, and the registry's one.
    assert 1 <= limited["store_connections_after_starts"] <= 4
    assert 1 <= limited["store_connections_after_resumes"] <= 4
    assert unlimited["store_connections_after_starts"] >= 1
    figures = {f["name"]: f for f in report["figures"]}
    connections = figures["Redis connections after the starts"]
    assert connections["value"] == limited["store_connections_after_starts"]
    assert connections["baseline"] == unlimited["store_connections_after_starts"]
    assert connections["ratio"] == round(connections["value"] / connections["baseline"], 3)


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--rounds=6"], "--rounds must be 1..5"),
        (["--limit=0"], "--limit must be 1..10,000"),
        (["--sessions=1", "--clients=2"], "--sessions must be from --clients"),
        (["--worker-arg=--store-max-connections=3"], "--store, --store-max-connections"),
    ],
)
def test_what_it_refuses(flags: list[str], problem: str) -> None:
    with pytest.raises(SystemExit, match=rf"^loadtest\.store_pool: .*{problem}"):
        resolve_config(build_parser().parse_args(["--quick", *flags]))
