"""Voice benchmark: how many real-time voice sessions one worker sustains, and at what cost.

``python -m loadtest.voice`` climbs a ladder of N concurrent voice
sessions. At each rung a fresh ``wsserver serve`` (energy VAD) takes N sessions
that stream 20 ms microphone chunks in real time from looped speech fixtures,
a share of them barging in on a spoken answer, from separate client processes.
It measures:

1. capacity: whether the worker's reaction to speech (deciding chunk sent ->
   ``input_audio.speech_started``) stays flat, beside same-run ping round trips,
   with every onset heard and no audio refused; the largest N that passes;
2. worker CPU per session (% of a core, µs per audio second), beside a bare
   ``websockets`` server that receives the same frames and drops them
   (:mod:`loadtest.voice.bare_server`), at the same N;
3. barge-in: deciding chunk sent -> the interrupting ``response.done`` and ->
   the answer's last audio frame, beside the same run's ping round trips.

It prints every figure beside its baseline and the ratio, and writes a JSON
report. See ``loadtest/README.md`` for what each figure means.
"""

from __future__ import annotations

import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from loadtest.common.clients import raise_fd_limit
from loadtest.common.environment import environment
from loadtest.common.report import write_json
from loadtest.common.servers import tail_on_error
from loadtest.voice.config import VoiceConfig, build_parser, resolve_config
from loadtest.voice.figures import (
    PASS,
    build_figures,
    capacity,
    print_summary,
    verdict,
    warnings_for,
)
from loadtest.voice.phase import measure_rung, start_voice_server


def _rung(config: VoiceConfig, sessions: int, log_dir: Path) -> dict[str, Any]:
    """The worker, then the bare baseline, each fresh, at N sessions."""
    rung: dict[str, Any] = {"sessions": sessions}
    names = ("worker", "bare") if config.bare_duration > 0 else ("worker",)
    for name in names:
        print(f"[N={sessions}] {name} ...", flush=True)
        with (
            start_voice_server(name, config, sessions, log_dir) as server,
            tail_on_error(server),
        ):
            rung[name] = measure_rung(server, config, sessions)
    rung["verdict"] = verdict(config, sessions, rung["worker"])
    print(f"[N={sessions}] {rung['verdict']['status']}", flush=True)
    return rung


def run(config: VoiceConfig, log_dir: Path) -> dict[str, Any]:
    """Every rung of the ladder, smallest first."""
    rungs: list[dict[str, Any]] = []
    for sessions in config.ladder:
        rungs.append(_rung(config, sessions, log_dir))
        if config.stop_on_fail and rungs[-1]["verdict"]["status"] != PASS:
            break
    return {"rungs": rungs, "capacity": capacity(rungs)}


def _terminate_on_sigterm() -> None:
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run the ladder, print the summary, write the report."""
    config = resolve_config(build_parser().parse_args(argv))
    raise_fd_limit()  # inherited by the servers and the clients
    _terminate_on_sigterm()
    started = datetime.now().isoformat(timespec="seconds")
    env = environment()  # the tree under test, read before others can change it
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-voice-") as log_dir:
        results = run(config, Path(log_dir))
    figures = build_figures(results)
    git_after = environment()["git"]
    if git_after != env["git"]:
        env["git_after_run"] = git_after
    report = {
        "benchmark": "voice",
        "started_at": started,
        "elapsed_s": round(time.monotonic() - began, 1),
        "config": {**asdict(config), "report": str(config.report)},
        "environment": env,
        "figures": [f.to_dict() for f in figures],
        "results": results,
        "warnings": warnings_for(config, results),
    }
    print_summary(config, report, figures)
    write_json(config.report, report)
    print(f"\nreport: {config.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
