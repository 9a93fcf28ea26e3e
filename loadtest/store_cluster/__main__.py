"""Store benchmark on Redis Cluster: tokens/s and Redis round trips per token through a
worker on a 3-primary Redis Cluster (a replica each) against one on a single Redis.

``python -m loadtest.store_cluster`` starts one redis-server and one cluster on free
loopback ports, then, for each, a fresh ``wsserver serve --store …`` worker subprocess
and N concurrent sessions that each stream answers. Both phases run in the same run,
with the same load: the ratios are what to read. It prints the figures and writes a
JSON report (``--report``). See ``loadtest/README.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadtest.store_cluster.load import Phase, measure
from loadtest.store_cluster.nodes import RedisNodes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtest.store_cluster", description=__doc__)
    parser.add_argument("--sessions", type=int, default=100, help="concurrent sessions")
    parser.add_argument("--rounds", type=int, default=2, help="answers each session streams")
    parser.add_argument(
        "--decode-rate", type=float, default=100.0, help="tokens/s of each session's answer"
    )
    parser.add_argument("--answer-tokens", type=int, default=200, help="tokens per answer")
    parser.add_argument(
        "--store-flush-ms", type=float, default=5.0, help="the worker's store write window"
    )
    parser.add_argument(
        "--report",
        type=Path,
        default=Path("loadtest/reports/store_cluster.json"),
        help="where the JSON report goes",
    )
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Single Redis first, then the cluster; a fresh worker for each."""
    phases: dict[str, Phase] = {}
    for name, on_cluster in (("single", False), ("cluster", True)):
        with RedisNodes(cluster=on_cluster) as nodes:
            phases[name] = asyncio.run(measure(args, nodes))
    single, cluster = phases["single"], phases["cluster"]
    return {
        "benchmark": "store_cluster",
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "single": single.to_dict(),
        "cluster": cluster.to_dict(),
        "ratios": {
            "tokens_per_s": _ratio(cluster.tokens_per_s, single.tokens_per_s),
            "round_trips_per_token": _ratio(
                cluster.round_trips_per_token, single.round_trips_per_token
            ),
            "redis_commands_per_token": _ratio(
                cluster.commands_per_token, single.commands_per_token
            ),
            "worker_cpu_per_token": _ratio(cluster.cpu_per_token, single.cpu_per_token),
        },
    }


def _ratio(value: float, baseline: float) -> float:
    return round(value / baseline, 3) if baseline else 0.0


def print_summary(report: dict[str, Any]) -> None:
    rows = [
        ("tokens/s", "tokens_per_s"),
        ("Redis round trips per token", "round_trips_per_token"),
        ("Redis commands per token", "redis_commands_per_token"),
        ("worker CPU µs per token", "worker_cpu_us_per_token"),
    ]
    print(f"{'figure':32} {'single':>10} {'cluster':>10} {'ratio':>7}")
    for label, key in rows:
        single, cluster = report["single"][key], report["cluster"][key]
        ratio = _ratio(cluster, single)
        print(f"{label:32} {single:>10.3f} {cluster:>10.3f} {ratio:>7.3f}")
    for name in ("single", "cluster"):
        phase = report[name]
        if phase["failed_sessions"]:
            print(f"warning: {phase['failed_sessions']} sessions failed on {name}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args = build_parser().parse_args(argv)
    report = run(args)
    print_summary(report)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nreport: {args.report}")
    failed = report["single"]["failed_sessions"] + report["cluster"]["failed_sessions"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
