"""Realtime benchmark: ``/v1/realtime`` against the native protocol, same worker, same run.

``python -m loadtest.realtime`` starts one ``wsserver serve`` (simulated engine) as a
subprocess and opens N sessions of each dialect on it with the same client stack
(this environment's ``websockets``). In alternating rounds, each session of one
dialect asks for an answer and then for one it cancels, all N at once:

1. TTFT: the request sent (native ``response.create`` with ``input``; Realtime
   ``conversation.item.create`` + ``response.create``) -> the first text delta
   (``response.text.delta``; ``response.output_text.delta``), p50/p99;
2. cancel -> done: ``response.cancel`` sent after a few deltas -> ``response.done``;
3. the worker's CPU per response (psutil on its pid, over each dialect's rounds).

Then, when the unmodified openai SDK's environment is there, one SDK session over
``/v1/realtime`` (a subprocess) against one native session of this stack, alone.
Every figure is printed beside its native baseline as a ratio, and the JSON report is
written. See ``loadtest/README.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadtest.common.harness import run_benchmark
from loadtest.realtime.config import RealtimeBenchConfig, build_parser, resolve_config
from loadtest.realtime.figures import build_figures, print_summary, realtime_warnings
from loadtest.realtime.phases import run_phases


def run(config: RealtimeBenchConfig, log_dir: Path) -> dict[str, Any]:
    """The measured phases, with the shape the figures read."""
    results = run_phases(config, log_dir)
    return {"sessions": config.sessions, "rounds": config.rounds, **results}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    config = resolve_config(build_parser().parse_args(argv))
    return run_benchmark(
        "realtime",
        config,
        run=lambda log_dir: run(config, log_dir),
        figures_of=build_figures,
        warnings_of=realtime_warnings,
        print_summary=print_summary,
    )


if __name__ == "__main__":
    raise SystemExit(main())
