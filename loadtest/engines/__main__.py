"""Engines benchmark: the local engine through the worker vs the same engine called directly.

``python -m loadtest.engines`` runs the embedded llama.cpp server with SmolLM2-135M (one
thread) and measures, in one run, on each path in turn (each with a fresh model server):

1. text: N concurrent sessions asking Q questions each (the answer kept in the history):
   time to first token (request sent -> first text) p50/p99, delivered tokens/s, and
   the worker's added TTFT: ``wsserver serve --engine local`` reached by the Python SDK
   over a WebSocket, beside the same engine (:class:`LocalEngine`) called in process;
2. interrupt: K answers cut after a few deltas: interrupt sent (or ``abort()`` called,
   direct) -> no slot of the llama.cpp server decoding (its ``/slots``, polled);
3. voice (``--stt whisper --tts piper``): V concurrent voice sessions speak questions
   (made with piper) in manual turn mode: end of input -> first answer audio, and
   transcript -> first audio, p50/p99, and the worker's added time to first audio,
   beside the same pipeline (``PipelineEngine`` over ``LocalEngine``, built by
   ``wsserver.worker.components`` from the worker's flags) given the same spoken turns
   in process.

It prints every figure beside its baseline and the ratio, and writes a JSON report.
See ``loadtest/README.md``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadtest.common.harness import run_benchmark
from loadtest.common.servers import tail_on_error
from loadtest.engines import direct, direct_voice, through_worker, voice
from loadtest.engines.config import EnginesConfig, build_parser, resolve_config
from loadtest.engines.figures import build_figures, print_summary, summaries, warnings_for


def run(config: EnginesConfig, log_dir: Path) -> dict[str, Any]:
    """The baseline, then the worker, each with a fresh model server (loaded once per path)."""
    cuts = tuple(p for p in config.phases if p in ("text", "interrupt"))
    if not config.interrupts:
        cuts = tuple(p for p in cuts if p != "interrupt")
    results: dict[str, Any] = {}
    if cuts:
        print(f"[{', '.join(cuts)}] engine called directly ...", flush=True)
        baseline = asyncio.run(direct.measure(config, cuts))
        print(f"[{', '.join(cuts)}] worker ...", flush=True)
        server, llama = through_worker.start_worker(config, config.sessions, log_dir)
        with server, tail_on_error(server):
            measured = asyncio.run(through_worker.measure(server.url, llama, config, cuts))
        for phase in cuts:
            results[phase] = {"worker": measured[phase], "direct": baseline[phase]}
    if "voice" in config.phases and config.voice_sessions:
        speech = voice.speak_questions()  # once: piper's output varies between calls
        print("[voice] pipeline called directly ...", flush=True)
        voice_baseline = asyncio.run(direct_voice.measure_voice_direct(config, speech))
        print("[voice] worker with --stt whisper --tts piper ...", flush=True)
        server, _ = through_worker.start_worker(
            config, config.voice_sessions, log_dir, *voice.VOICE_FLAGS
        )
        with server, tail_on_error(server):
            measured_voice = asyncio.run(voice.measure_voice(server.url, config, speech))
        results["voice"] = {"worker": measured_voice, "direct": voice_baseline}
    results["summary_ms"] = summaries(results)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    config = resolve_config(build_parser().parse_args(argv))
    return run_benchmark(
        "engines",
        config,
        run=lambda log_dir: run(config, log_dir),
        figures_of=build_figures,
        warnings_of=warnings_for,
        print_summary=print_summary,
    )


if __name__ == "__main__":
    sys.exit(main())
