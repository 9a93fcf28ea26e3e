"""``python -m loadtest.capacity``: a tiny real run on a real redis-server, every phase."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loadtest.capacity.config import build_parser, resolve_config
from tests.processes import ROOT, cli_env


def test_a_tiny_run_measures_every_kind_of_session(tmp_path: Path) -> None:
    report = tmp_path / "capacity.json"
    flags = ["--idle-sessions=30", "--streaming-sessions=6", "--voice-sessions=3"]
    flags += ["--router-sessions=10", "--warmup=0.5", "--duration=1", "--rounds=1"]
    flags += ["--clients=1", "--drain=2", "--answer-tokens=20", f"--report={report}"]
    result = subprocess.run(
        [sys.executable, "-m", "loadtest.capacity", *flags],
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=150,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(report.read_text())
    (round_,) = data["results"]["rounds"]
    lifecycle = round_["lifecycle"]
    # Every idle session was dropped without a close frame and came back resumed.
    assert lifecycle["sessions_opened"] == 30
    assert lifecycle["resume"]["sessions_resumed"] == 30, lifecycle["resume"]["failures"]
    # Starts write the session to Redis; resumes read it back.
    assert lifecycle["session_start"]["redis"]["by_command"].get("hset", 0) >= 1
    assert lifecycle["resume"]["redis"]["by_command"].get("hgetall", 0) >= 1
    assert lifecycle["rss_idle_mib"] > 0 and lifecycle["cpu_idle"]["wall_s"] >= 1
    assert lifecycle["redis_connections_opened"] >= 1
    stream = round_["stream"]
    assert stream["sessions_opened"] == 6 and stream["tokens_per_s"] > 0
    # Tokens reach the replay log in Redis.
    assert stream["redis_per_token"]["commands"] > 0
    assert stream["redis_per_token"]["by_command"].get("xadd", 0) > 0
    assert round_["voice"]["sessions_opened"] == 3
    router = round_["router"]
    assert router["relayed_connections"] == 10 and router["tokens_per_s"] > 0
    assert router["router_cpu_s_whole_phase"] > 0
    # Ten connections cost less than the clock's 10 ms tick: present, maybe 0.
    assert router["router_cpu_us_per_new_connection"] >= 0
    assert router["worker_cpu_us_per_session_start_via_router"] >= 0
    metrics = data["results"]["summary"]["metrics"]
    assert metrics["delivered tokens/s (streaming phase)"]["median"] == stream["tokens_per_s"]
    figures = {f["name"]: f for f in data["figures"]}
    opening = figures["router CPU per new connection"]
    assert opening["baseline_name"] == "worker CPU per session start, via router"
    resume = figures["resume: Redis commands"]
    assert resume["baseline_name"] == "session start: Redis commands"
    assert resume["ratio"] == round(resume["value"] / resume["baseline"], 3)


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--rounds=10"], "--rounds must be 1..9"),
        (["--idle-sessions=1", "--clients=2"], "every session count must be from --clients"),
        (["--token-rate=0"], "--token-rate must be in"),
        (["--worker-arg=--store=memory"], "--store and --workers are set by the benchmark"),
    ],
)
def test_what_it_refuses(flags: list[str], problem: str) -> None:
    with pytest.raises(SystemExit, match=rf"^loadtest\.capacity: .*{problem}"):
        resolve_config(build_parser().parse_args(["--quick", *flags]))
