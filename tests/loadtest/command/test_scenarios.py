"""``python -m loadtest SCENARIO``: every scenario runs for real and writes its report and plots.

Correctness, never speed. Every scenario (a few sessions for a couple of seconds) runs
against a worker this module started (``--url``), all in one event loop at once, as
``main`` runs them; one more run there cannot finish in the duration bound and is cut.
One real command line starts its own worker and baseline. The handoff's accounting:
connections were cut mid-answer and resumed, with 0 lost and 0 doubled events.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib.image
import pytest

from loadtest.command.catalog import SCENARIOS
from loadtest.command.main import build_parser, main, run_scenario_async
from loadtest.command.options import settings_from
from tests.processes import ROOT, WSSERVER, WorkerProcess, cli_env

PNG_HEADER = b"\x89PNG\r\n\x1a\n"
FIGURE_KEYS = {"name", "unit", "value", "baseline_name", "baseline", "ratio"}
RESULT_KEYS = {"latency_ms", "samples_ms", "counters", "statuses", "close_codes", "timeline"}
# A generous drain: the bound only stops a run that cannot end; these end when done.
SMALL = ["--sessions", "3", "--duration", "2", "--drain", "15", "--ramp", "0.3", "--no-progress"]
SCENARIO_FLAGS = {
    "voice": ["--turn-ms", "600"],
    "slow-clients": ["--sessions", "4"],
    "mixed": ["--sessions", "6", "--turn-ms", "600"],
}
# Answers of 400 tokens at 4 tokens/s last 100 s; the bound is 1 + 0.5 s. (The other
# scenarios share this test's event loop, and their reports and plots can hold it for
# seconds on a loaded machine: the cut may come late, never 100 s late.)
CUT = ["chat", "--sessions", "2", "--duration", "1", "--drain", "0.5", "--no-baseline"]


def start_worker(*flags: str, name: str) -> WorkerProcess:
    flags += ("--prefill-per-token-ms=0", "--log-level=WARNING")
    return WorkerProcess(*flags, name=name).start()


def new_key(keys_file: Path) -> str:
    """A fresh API key, its hashed line appended to ``keys_file`` (``wsserver keys new``)."""
    argv = [*WSSERVER, "keys", "new", "--principal", "loadtest", "--keys-file", str(keys_file)]
    made = subprocess.run(argv, env=cli_env(), capture_output=True, text=True, timeout=30)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    fast = ["--decode-rate=100", "--answer-tokens=20"]
    fast += ["--outbox-max-bytes=65536", "--socket-send-buffer=16384"]
    keys_file = tmp_path_factory.mktemp("keys") / "api-keys"
    key = new_key(keys_file)
    out: dict[str, Any] = {
        "fast": start_worker(*fast, name="loadtest-target"),
        "slow": start_worker("--decode-rate=4", "--answer-tokens=400", name="loadtest-slow"),
        # Answers of 2 s: an interrupt at the 8th token comes long before their end, on a
        # loaded machine too.
        "medium": start_worker("--decode-rate=10", "--answer-tokens=20", name="loadtest-medium"),
        "keyed": start_worker(
            "--auth=required", f"--api-keys-file={keys_file}", *fast, name="loadtest-keyed"
        ),
    }
    yield {**out, "key": key}
    for process in out.values():
        process.stop()


async def run_all(commands: dict[str, list[str]]) -> dict[str, int]:
    async def one(argv: list[str]) -> int:
        args = build_parser().parse_args(argv)
        return await run_scenario_async(args.scenario, settings_from(args, args.scenario))

    codes = await asyncio.gather(*(one(argv) for argv in commands.values()))
    return dict(zip(commands, codes, strict=True))


@pytest.fixture(scope="module")
def runs(workers: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Every scenario against the worker at once (only the handoff keeps its baseline)."""
    folder = tmp_path_factory.mktemp("runs")
    commands = {}
    for scenario in SCENARIOS:
        target = workers["medium" if scenario in ("barge-in", "mixed") else "fast"]
        argv = [scenario, "--url", target.url + "/v1/native", *SMALL]
        argv += [*SCENARIO_FLAGS.get(scenario, []), "--report", str(folder / f"{scenario}.json")]
        if scenario != "handoff":
            argv.append("--no-baseline")
        commands[scenario] = argv
    commands["cut"] = [*CUT, "--url", workers["slow"].url, "--report", str(folder / "cut.json")]
    with socket.socket() as probe:  # a port nobody listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    refused = ["chat", *SMALL, "--no-baseline", "--url", f"ws://127.0.0.1:{closed}/v1"]
    commands["refused"] = [*refused, "--report", str(folder / "refused.json")]
    keyed = ["chat", *SMALL, "--no-baseline", "--url", workers["keyed"].url]
    commands["keyed"] = [*keyed, "--api-key", workers["key"], "--report", str(folder / "k.json")]
    commands["unkeyed"] = [*keyed, "--report", str(folder / "unkeyed.json")]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        codes = asyncio.run(run_all(commands))
    reports = {
        name: json.loads(Path(argv[argv.index("--report") + 1]).read_text())
        for name, argv in commands.items()
    }
    printed_text = printed.getvalue()
    return {
        "codes": codes,
        "reports": reports,
        "folder": folder,
        "printed": printed_text,
        "key": workers["key"],
    }


def workers_key(runs: Any) -> str:
    return str(runs["key"])


def loadtest(*argv: str) -> tuple[int, str]:
    """The real command line, to its end."""
    run = subprocess.run(
        [sys.executable, "-m", "loadtest", *argv],
        cwd=ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=90,
    )
    return run.returncode, run.stdout + run.stderr[-3000:]


def check_report(report: dict[str, Any], folder: Path) -> None:
    """The schema every report has, and plots that decode."""
    assert report["schema"] == "wsserver.loadtest.report/1"
    assert set(report) >= {"scenario", "config", "target", "baseline", "cut", "figures"}
    assert set(report) >= {"results", "warnings", "environment", "plots"}
    for figure in report["figures"]:
        assert set(figure) == FIGURE_KEYS, figure
    assert set(report["results"]["target"]) >= RESULT_KEYS
    assert report["results"]["target"]["timeline"], "no timeline point"
    assert len(report["plots"]) == 2, report["plots"]
    for name in report["plots"]:
        path = folder / name
        assert path.read_bytes()[:8] == PNG_HEADER, name
        pixels = matplotlib.image.imread(path)
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100, name


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_each_scenario_runs_against_a_url(runs: Any, scenario: str) -> None:
    report = runs["reports"][scenario]
    assert runs["codes"][scenario] == 0, report["warnings"]
    check_report(report, runs["folder"])
    assert report["scenario"] == scenario and report["cut"] is False
    assert report["target"] == {"url": report["config"]["url"], "local": False}
    result = report["results"]["target"]
    assert result["tokens"] > 0 and result["errors"] == {}, result["errors"]
    latency = result["latency_ms"]
    assert latency["ttft_ms"]["count"] > 0
    if scenario in ("barge-in", "mixed"):
        assert latency["interrupt_done_ms"]["count"] > 0
        assert result["statuses"].get("interrupted/client", 0) > 0
    if scenario == "voice":
        assert latency["speech_end_first_audio_ms"]["count"] > 0
        assert result["counters"]["audio_bytes"] > 0
    if scenario == "slow-clients":
        # Two bad readers: each ended closed by the server or still open, never unaccounted.
        assert result["roles"] == {"stopped": 1, "slowed": 1, "chat": 2}
        assert sum(result["close_codes"].values()) == 2, result["close_codes"]
    if scenario == "reconnect-storm":
        assert result["counters"]["connections_cut"] == 3
        assert result["counters"]["resumed"] == 3
    assert f"{scenario}: {report['config']['sessions']} sessions" in runs["printed"]


def test_handoff_resumes_every_cut_with_nothing_lost_or_doubled(runs: Any) -> None:
    report = runs["reports"]["handoff"]
    counters = report["results"]["target"]["counters"]
    assert counters["connections_cut"] > 0
    assert counters["resumed"] == counters["connections_cut"], counters
    assert counters["lost_events"] == 0 and counters["doubled_events"] == 0, counters
    assert counters["events_numbered"] > 0
    figures = {f["name"]: f for f in report["figures"]}
    assert figures["lost events"]["value"] == 0 and figures["doubled events"]["value"] == 0
    # With --url the baseline still ran, on this machine, and the report says so.
    assert report["baseline"]["local"] is True
    assert "the target is remote (--url); the baseline ran on this machine" in report["warnings"]
    assert figures["cut->session.ready p50"]["baseline"] is not None


def test_a_local_run_starts_its_worker_and_baseline(tmp_path: Path) -> None:
    report_path = tmp_path / "chat.json"
    code, text = loadtest("chat", *SMALL, "--report", str(report_path))
    assert code == 0, text
    report = json.loads(report_path.read_text())
    check_report(report, tmp_path)
    assert report["target"]["local"] is True and report["baseline"]["server"] == "bare"
    for figure in report["figures"]:
        assert figure["value"] is not None and figure["baseline"] is not None, figure
        want = round(figure["value"] / figure["baseline"], 3) if figure["baseline"] else None
        assert figure["ratio"] == want, figure
    assert "bare server" in text and "ratio" in text


def test_the_duration_bound_cuts_a_run_that_cannot_finish(runs: Any) -> None:
    assert runs["codes"]["cut"] == 3
    report = runs["reports"]["cut"]
    assert report["cut"] is True and report["results"]["target"]["cut"] is True
    # Cut, not finished: its answers last 100 s and none completed.
    assert report["results"]["target"]["statuses"].get("completed", 0) == 0, report["results"]
    assert "the duration bound cut the run" in " ".join(report["warnings"])
    check_report(report, runs["folder"])


def test_a_target_that_refuses_every_connection_fails_the_run(runs: Any) -> None:
    assert runs["codes"]["refused"] == 1
    report = runs["reports"]["refused"]
    assert report["results"]["target"]["errors"] == {"connect: ConnectionRefusedError": 3}
    assert "no session opened on the target" in report["warnings"]
    assert report["cut"] is False


def test_the_api_key_opens_sessions_on_a_worker_that_requires_one(runs: Any) -> None:
    keyed, unkeyed = runs["reports"]["keyed"], runs["reports"]["unkeyed"]
    assert runs["codes"]["keyed"] == 0, keyed["warnings"]
    assert keyed["results"]["target"]["counters"]["sessions_opened"] == 3
    assert keyed["config"]["api_key"] == "***"
    assert workers_key(runs) not in json.dumps(keyed) and workers_key(runs) not in runs["printed"]
    assert runs["codes"]["unkeyed"] == 1
    assert unkeyed["results"]["target"]["errors"] == {"connect: InvalidStatus": 3}


def test_a_benchmark_name_runs_that_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    argv = list(sys.argv)
    assert main(["partial-json", "--help"]) == 0
    assert "usage: python -m loadtest.partial_json" in capsys.readouterr().out
    assert sys.argv == argv
