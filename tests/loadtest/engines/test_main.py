"""``python -m loadtest.engines --quick``: the smallest real run, and its report's shape.

Correctness of the report, never speed: every figure has a value, a same-run baseline and
their ratio; every sample the run promised is there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loadtest.engines.config import build_parser, resolve_config
from tests.processes import ROOT, cli_env

pytest.importorskip("xllamacpp")


def test_quick_run_writes_a_complete_report(tmp_path: Path) -> None:
    report_path = tmp_path / "engines.json"
    argv = ["--quick", "--report", str(report_path)]
    run = subprocess.run(
        [sys.executable, "-m", "loadtest.engines", *argv],
        cwd=ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "TTFT p50 (ms)" in run.stdout and "engine called directly" in run.stdout
    report = json.loads(report_path.read_text())
    config = resolve_config(build_parser().parse_args(argv))
    assert report["benchmark"] == "engines"
    names = [f["name"] for f in report["figures"]]
    assert names == [
        "TTFT p50",
        "TTFT p99",
        "tokens/s, all sessions",
        "worker's added TTFT p50",
        "interrupt -> upstream idle p50",
        "interrupt -> upstream idle p99",
        "voice: end of speech -> first audio p50",
        "voice: end of speech -> first audio p99",
        "voice: transcript -> first audio p50",
        "voice: end of speech -> transcript p50",
    ]
    for figure in report["figures"]:
        assert figure["value"] is not None and figure["baseline"] is not None, figure
        assert figure["ratio"] == round(figure["value"] / figure["baseline"], 3)
    answers = config.sessions * config.questions
    for path in ("worker", "direct"):
        text = report["results"]["text"][path]
        assert len(text["ttft_s"]) == len(text["tokens"]) == answers, text
        assert all(0 < tokens <= config.max_tokens for tokens in text["tokens"])
        cut = report["results"]["interrupt"][path]
        assert len(cut["idle_s"]) + cut["not_measured"] == config.interrupts
        assert cut["idle_s"], "at least one interrupt was measured"
    assert report["results"]["summary_ms"]["text"]["worker"]["ttft_ms"]["count"] == answers
    voice = report["results"]["voice"]["worker"]
    turns = config.voice_sessions * config.questions
    for samples in ("transcript_s", "first_text_s", "first_audio_s", "transcripts", "audio_ms"):
        assert len(voice[samples]) == turns, (samples, voice)
    assert len(voice["ttft_s"]) == turns
    assert all(ms > 0 for ms in voice["audio_ms"]), "every answer was spoken"
    # The worker heard the piper-spoken question (Whisper base on clean speech).
    assert "bees" in voice["transcripts"][0].lower(), voice["transcripts"]
