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


# Three model servers start twice (worker and direct): ~60 s on two quiet cores, more on
# busy ones; the run's own limit (240 s) decides, not the suite's default 120 s.
@pytest.mark.timeout(300)
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
        "voice: end of input -> first audio p50",
        "voice: end of input -> first audio p99",
        "voice: transcript -> first audio p50",
        "voice: transcript -> first audio p99",
        "voice: worker's added time to first audio p50",
        "voice: end of input -> transcript p50",
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
    turns = config.voice_sessions * config.questions
    voices = report["results"]["voice"]
    for path in ("worker", "direct"):
        voice = voices[path]
        for samples in (
            "transcript_s",
            "first_text_s",
            "first_audio_s",
            "transcript_to_audio_s",
            "transcripts",
            "audio_ms",
        ):
            assert len(voice[samples]) == turns, (path, samples, voice)
        assert all(ms > 0 for ms in voice["audio_ms"]), (path, "every answer was spoken")
        # The pipeline heard the piper-spoken question (Whisper base on clean speech).
        assert "bees" in voice["transcripts"][0].lower(), (path, voice["transcripts"])
        assert voice["turn_detection"] == "manual" and voice["silence_window_waited_ms"] == 0
        summary = report["results"]["summary_ms"]["voice"][path]
        assert summary["first_audio_ms"]["count"] == turns
    # Both paths were given the very same spoken questions.
    assert voices["worker"]["question_ms"] == voices["direct"]["question_ms"]
    assert len(voices["worker"]["ttft_s"]) == turns
    by_name = {f["name"]: f for f in report["figures"]}
    added = by_name["voice: worker's added time to first audio p50"]
    first = by_name["voice: end of input -> first audio p50"]
    assert added["baseline"] == first["baseline"]
    assert added["value"] == round(first["value"] - first["baseline"], 3)
    assert "pipeline called directly" in run.stdout and "turn detection manual" in run.stdout
