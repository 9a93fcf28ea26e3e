"""Partial-JSON benchmark: our incremental parser against re-parsing with jiter.

``python -m loadtest.partial_json`` streams a JSON document (200 KB, and smaller ones)
in deltas of 4-16 characters, the way tool-call arguments arrive, and after every delta
gets the provisional value two ways:

1. ours: :class:`protocol.partial_json.PartialJson` (``unicode_only``, as the tool loop
   uses it) is fed the delta and its ``value`` read, as ``protocol.tool_loop`` does for
   every ``tool_call.delta`` event;
2. the baseline: pydantic's JSON parser (jiter, in ``pydantic_core``) parses the whole
   text so far with ``from_json(text, allow_partial="trailing-strings")``, which keeps a
   cut string as ours does.

It reports microseconds per delta (p50, p99) and the total over the document for both,
as a ratio; the parser's feed alone (no value read); the whole document parsed at once
(ours, jiter, and ``json.loads``); and whether the two provisional values agree at
sampled deltas. Everything runs in this one process, on one core; nothing touches the
network. See ``loadtest/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import pydantic_core
from pydantic_core import from_json

from loadtest.common.config import BenchmarkConfig, add_report_flags, benchmark_parser, report_path
from loadtest.common.environment import environment
from loadtest.common.report import Figure, format_table, summarize, write_json
from loadtest.partial_json.document import build_document, cut_into_deltas
from protocol.partial_json import PartialJson

WHOLE_REPEATS = 15
AGREEMENT_SAMPLES = 400
"""Deltas, evenly spread, at which the two provisional values are compared (untimed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartialJsonConfig(BenchmarkConfig):
    """The documents and how they are cut."""

    sizes_kb: tuple[int, ...] = (2, 20, 200)
    shortest_delta: int = 4
    longest_delta: int = 16
    seed: int = 1

    def problems(self) -> list[str]:
        """Sizes and delta lengths the benchmark refuses."""
        problems = super(PartialJsonConfig, self).problems()
        if not self.sizes_kb or not all(1 <= size <= 2000 for size in self.sizes_kb):
            problems.append("--sizes-kb must be 1..2000 each")
        if not 1 <= self.shortest_delta <= self.longest_delta <= 4096:
            problems.append("need 1 <= --shortest-delta <= --longest-delta <= 4096")
        return problems


def _timed(deltas: Sequence[str], step: Callable[[str], object]) -> list[int]:
    """Nanoseconds ``step`` took for each delta, in order."""
    clock = time.perf_counter_ns
    samples = []
    for delta in deltas:
        began = clock()
        step(delta)
        samples.append(clock() - began)
    return samples


def stream_ours(deltas: Sequence[str], *, read: bool) -> list[int]:
    """Feed each delta to one parser (and read the provisional value after it)."""
    parser = PartialJson(unicode_only=True)

    def step(delta: str) -> object:
        parser.feed(delta)
        return parser.value if read else None

    samples = _timed(deltas, step)
    parser.finish()
    return samples


def stream_jiter(deltas: Sequence[str]) -> list[int]:
    """Parse the whole text received so far, in partial mode, after each delta."""
    received: list[str] = []

    def step(delta: str) -> object:
        received.append(delta)
        return from_json("".join(received), allow_partial="trailing-strings")

    return _timed(deltas, step)


def _whole_ms(parse: Callable[[str], object], text: str) -> float:
    """Median of a few parses of the whole text, in milliseconds."""
    times = []
    for _ in range(WHOLE_REPEATS):
        began = time.perf_counter_ns()
        parse(text)
        times.append(time.perf_counter_ns() - began)
    return statistics.median(times) / 1e6


def _ours_whole(text: str) -> object:
    parser = PartialJson(unicode_only=True)
    parser.feed(text)
    return parser.finish()


def agreement(deltas: Sequence[str]) -> dict[str, Any]:
    """At evenly spread deltas, do the two provisional values agree? (untimed)"""
    every = max(1, len(deltas) // AGREEMENT_SAMPLES)
    parser = PartialJson(unicode_only=True)
    received: list[str] = []
    compared = differed = 0
    first_difference: dict[str, Any] | None = None
    for index, delta in enumerate(deltas):
        parser.feed(delta)
        received.append(delta)
        if index % every and index != len(deltas) - 1:
            continue
        text = "".join(received)
        ours, theirs = parser.value, from_json(text, allow_partial="trailing-strings")
        compared += 1
        if ours != theirs:
            differed += 1
            if first_difference is None:
                first_difference = {"at_char": len(text), "text_tail": text[-40:]}
    return {"compared": compared, "differed": differed, "first_difference": first_difference}


def _summary_us(samples: Sequence[int]) -> dict[str, Any]:
    summary = summarize([s / 1000 for s in samples])
    return {**summary, "total_ms": round(sum(samples) / 1e6, 2)}


def measure(size_kb: int, config: PartialJsonConfig) -> dict[str, Any]:
    """Every figure for one document size."""
    text = build_document(size_kb * 1000, config.seed)
    deltas = cut_into_deltas(text, config.shortest_delta, config.longest_delta, config.seed)
    expected = json.loads(text)
    if _ours_whole(text) != expected or from_json(text) != expected:
        raise RuntimeError(f"a parser disagrees with json.loads on the {size_kb} KB document")
    gc.collect()
    return {
        "chars": len(text),
        "deltas": len(deltas),
        "ours_feed_and_value_us": _summary_us(stream_ours(deltas, read=True)),
        "ours_feed_only_us": _summary_us(stream_ours(deltas, read=False)),
        "jiter_reparse_us": _summary_us(stream_jiter(deltas)),
        "whole_ms": {
            "ours": round(_whole_ms(_ours_whole, text), 3),
            "jiter": round(_whole_ms(from_json, text), 3),
            "json_loads": round(_whole_ms(json.loads, text), 3),
        },
        "agreement": agreement(deltas),
    }


def build_figures(results: dict[str, dict[str, Any]]) -> list[Figure]:
    """Ours beside jiter for each size (and the whole parse beside json.loads too)."""
    figures = []
    for size, r in results.items():
        ours, feed, jiter = (
            r["ours_feed_and_value_us"],
            r["ours_feed_only_us"],
            r["jiter_reparse_us"],
        )
        at = f"{size} KB, {r['deltas']:,} deltas"
        figures += [
            Figure(f"{at}: per delta p50", "us", ours["p50"], "jiter re-parse", jiter["p50"]),
            Figure(f"{at}: per delta p99", "us", ours["p99"], "jiter re-parse", jiter["p99"]),
            Figure(
                f"{at}: streamed, total",
                "ms",
                ours["total_ms"],
                "jiter re-parse",
                jiter["total_ms"],
            ),
            Figure(
                f"{at}: feed only, total",
                "ms",
                feed["total_ms"],
                "jiter re-parse",
                jiter["total_ms"],
            ),
            Figure(
                f"{size} KB whole document",
                "ms",
                r["whole_ms"]["ours"],
                "jiter",
                r["whole_ms"]["jiter"],
            ),
            Figure(
                f"{size} KB whole document",
                "ms",
                r["whole_ms"]["ours"],
                "json.loads",
                r["whole_ms"]["json_loads"],
            ),
        ]
    return figures


def print_summary(config: PartialJsonConfig, report: dict[str, Any], figures: list[Figure]) -> None:
    """The table, then the agreement of the provisional values."""
    print(
        f"\npartial JSON: deltas of {config.shortest_delta}-{config.longest_delta} characters; "
        f"ours = feed + value per delta, jiter = from_json(text so far, partial) "
        f"(pydantic-core {pydantic_core.__version__})\n"
    )
    print(format_table(figures, value_header="ours"))
    print()
    for size, r in report["results"].items():
        a = r["agreement"]
        print(
            f"{size} KB ({r['chars']:,} chars): provisional values equal at "
            f"{a['compared'] - a['differed']} of {a['compared']} sampled deltas"
            + (
                f"; first difference at char {a['first_difference']['at_char']}"
                if a["differed"]
                else ""
            )
        )


def build_parser() -> argparse.ArgumentParser:
    """Command-line flags."""
    defaults = PartialJsonConfig()
    p = benchmark_parser("partial_json", __doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true", help="documents of 2, 20 and 50 KB")
    p.add_argument(
        "--sizes-kb", type=int, nargs="+", metavar="KB", help="document sizes (2 20 200)"
    )
    p.add_argument("--shortest-delta", type=int, default=defaults.shortest_delta)
    p.add_argument("--longest-delta", type=int, default=defaults.longest_delta)
    p.add_argument("--seed", type=int, default=defaults.seed, help="document and cut seed")
    add_report_flags(p, worker_arg_help=None)
    return p


def resolve_config(args: argparse.Namespace) -> PartialJsonConfig:
    """Settings from parsed arguments, with the report path filled in."""
    sizes = args.sizes_kb or ((2, 20, 50) if args.quick else PartialJsonConfig().sizes_kb)
    return PartialJsonConfig(
        quick=args.quick,
        report=report_path(args, "partial-json"),
        sizes_kb=tuple(sizes),
        shortest_delta=args.shortest_delta,
        longest_delta=args.longest_delta,
        seed=args.seed,
    ).validated("partial_json")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    config = resolve_config(build_parser().parse_args(argv))
    started = datetime.now().isoformat(timespec="seconds")
    began = time.monotonic()
    results = {}
    for size in config.sizes_kb:
        print(f"[{size} KB] ...", flush=True)
        results[str(size)] = measure(size, config)
    figures = build_figures(results)
    report = {
        "benchmark": "partial-json",
        "started_at": started,
        "elapsed_s": round(time.monotonic() - began, 1),
        "config": {**asdict(config), "report": str(config.report)},
        "environment": {**environment(), "pydantic_core": pydantic_core.__version__},
        "figures": [f.to_dict() for f in figures],
        "results": results,
        "warnings": [],
    }
    print_summary(config, report, figures)
    write_json(config.report, report)
    print(f"\nreport: {config.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
