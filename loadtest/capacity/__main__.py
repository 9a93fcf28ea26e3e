"""Capacity benchmark: what one session of each kind costs a worker, Redis and a router.

``python -m loadtest.capacity`` starts a fresh ``redis-server`` on a free loopback
port and, each round, fresh workers on it (``--store redis://...``) and a fresh router:

- memory (RSS from /proc) and CPU (process times) per idle session (connected,
  heartbeating), per detached session (dropped, held for resume), per streaming
  session (answers at ``--token-rate``), per voice session (loadtest.voice's load);
- Redis commands, bytes and memory per token, per session start and per resume
  (``INFO stats``, ``INFO commandstats``, ``INFO memory`` before and after);
- router RSS per relayed connection and CPU per relayed frame.

Every phase is repeated ``--rounds`` times; the report has each round, then every
figure's median, min and max, and the rounds in which other processes on the machine
took more than a quarter of a core (flagged as disturbed). See ``docs/CAPACITY.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadtest.capacity.config import CapacityConfig, build_parser, resolve_config
from loadtest.capacity.figures import (
    build_figures,
    others_in_round,
    spread_table,
    summarize_rounds,
    warnings_for,
)
from loadtest.capacity.phases import (
    measure_lifecycle,
    measure_router,
    measure_stream,
    measure_voice,
)
from loadtest.common.clients import raise_fd_limit
from loadtest.common.harness import run_benchmark
from loadtest.common.redis_process import RedisProcess
from loadtest.common.report import Figure, format_table


def run(config: CapacityConfig, log_dir: Path) -> dict[str, Any]:
    """Every phase, ``config.rounds`` times, against one redis-server."""
    rounds = []
    with RedisProcess(log_dir) as redis:
        for index in range(config.rounds):
            print(f"[round {index + 1}/{config.rounds}] idle, detached, resumed ...", flush=True)
            round_: dict[str, Any] = {"round": index + 1}
            round_["lifecycle"] = measure_lifecycle(config, redis, log_dir)
            print(
                f"[round {index + 1}] streaming at {config.token_rate:g} tokens/s ...", flush=True
            )
            round_["stream"] = measure_stream(config, redis, log_dir)
            print(f"[round {index + 1}] voice ...", flush=True)
            round_["voice"] = measure_voice(config, redis, log_dir)
            print(f"[round {index + 1}] router ...", flush=True)
            round_["router"] = measure_router(config, redis, log_dir)
            round_["others_max_pct_of_core"] = others_in_round(round_)
            rounds.append(round_)
    return {"rounds": rounds, "summary": summarize_rounds(rounds)}


def print_summary(report: dict[str, Any], figures: list[Figure]) -> None:
    """The medians beside their baselines, the spreads, then the warnings."""
    print()
    print(format_table(figures, value_header="median"))
    print()
    print(spread_table(report["results"]))
    for warning in report["warnings"]:
        print(f"warning: {warning}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    config = resolve_config(build_parser().parse_args(argv))
    fd_limit = raise_fd_limit()
    if fd_limit < 2 * config.idle_sessions + 1024:
        print(f"warning: open-files limit {fd_limit} is low", file=sys.stderr)
    return run_benchmark(
        "capacity",
        config,
        run=lambda log_dir: run(config, log_dir),
        figures_of=build_figures,
        warnings_of=warnings_for,
        print_summary=print_summary,
        git_before_run=True,
    )


if __name__ == "__main__":
    sys.exit(main())
