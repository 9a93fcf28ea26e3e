"""``python -m loadtest.metrics_cost`` end to end at a tiny load: both workers measured,
the report written with the on/off ratio (no figure is judged: it is a benchmark)."""

from __future__ import annotations

import json
from pathlib import Path

from loadtest.metrics_cost.__main__ import main


def test_a_tiny_run_reports_cpu_per_token_on_and_off(tmp_path: Path) -> None:
    report = tmp_path / "cost.json"
    argv = ["--quick", "--sessions", "4", "--clients", "1", "--warmup", "0.3", "--duration", "1"]
    argv += ["--answer-tokens", "20", "--decode-rate", "100", "--report", str(report)]
    assert main(argv) == 0
    data = json.loads(report.read_text())
    assert data["benchmark"] == "metrics_cost"
    (cpu, *_) = data["figures"]
    assert cpu["name"].startswith("worker CPU per delivered token")
    assert cpu["value"] > 0 and cpu["baseline"] > 0 and cpu["ratio"] > 0
    (round_one,) = data["results"]["rounds"]
    assert round_one["on"]["metrics_bytes"] > 0, "the metered worker serves /metrics"
    assert round_one["off"]["metrics_bytes"] == 0, "the other one does not"
    for mode in ("on", "off"):
        assert round_one[mode]["sessions_opened"] == 4
        assert round_one[mode]["tokens_per_s"] > 0
