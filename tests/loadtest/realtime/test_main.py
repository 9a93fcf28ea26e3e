"""``python -m loadtest.realtime --quick``: the smallest real run, and its report's shape.

Correctness of the report, never speed: every figure has a value, a same-run native
baseline and their ratio; every answer completed and every cancel ended cancelled, in
both dialects; the unmodified SDK's sample is there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from loadtest.realtime.config import build_parser, resolve_config
from tests.openai_sdk import openai_sdk_python
from tests.processes import ROOT, cli_env


def test_quick_run_writes_a_complete_report(tmp_path: Path) -> None:
    report_path = tmp_path / "realtime.json"
    argv = ["--quick", "--report", str(report_path), "--sdk-python", openai_sdk_python()]
    run = subprocess.run(
        [sys.executable, "-m", "loadtest.realtime", *argv],
        cwd=ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "TTFT p50" in run.stdout and "native protocol" in run.stdout
    report = json.loads(report_path.read_text())
    config = resolve_config(build_parser().parse_args(argv))
    assert report["benchmark"] == "realtime"
    assert report["warnings"] == []
    names = [f["name"] for f in report["figures"]]
    n = config.sessions
    assert names == [
        f"TTFT p50, {n} sessions",
        f"TTFT p99, {n} sessions",
        f"cancel -> done p50, {n} sessions",
        f"cancel -> done p99, {n} sessions",
        "worker CPU per response",
        f"TTFT p50, {n} sessions",
        f"cancel -> done p50, {n} sessions",
        "worker CPU per response",
        "openai SDK: TTFT p50, one session",
        "openai SDK: TTFT p99, one session",
        "openai SDK: cancel -> done p50, one session",
        "openai SDK: cancel -> done p99, one session",
    ]
    for figure in report["figures"]:
        assert figure["value"] is not None and figure["baseline"] is not None, figure
        assert figure["ratio"] == round(figure["value"] / figure["baseline"], 3)
    answers = config.sessions * config.rounds
    baselines = [f["baseline_name"] for f in report["figures"]]
    assert baselines[5:8] == ["native protocol, voice session"] * 3
    for dialect in ("native", "realtime", "native_voice"):
        sample = report["results"]["concurrent"][dialect]
        assert sample["statuses"] == {"completed": answers, "cancelled": answers}, sample
        assert len(sample["ttft_s"]) == len(sample["cancel_s"]) == answers
    solo = report["results"]["solo"]
    assert len(solo["sdk"]["ttft_s"]) == len(solo["sdk"]["cancel_s"]) == config.sdk_turns
    assert len(solo["native"]["ttft_s"]) == config.sdk_turns
