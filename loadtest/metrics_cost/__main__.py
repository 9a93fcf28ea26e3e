"""Metrics cost: worker CPU per delivered token with ``--metrics on`` vs ``--metrics off``.

``python -m loadtest.metrics_cost`` runs the streaming load of ``loadtest.stream``
(N sessions asking for answers back to back, every n-th one interrupted, pings)
against two fresh worker subprocesses that differ only in ``--metrics``, alternating
on, off, on, off for ``--rounds`` rounds so drift on a shared machine hits both
alike. Worker CPU comes from the process's own times (user + system). It prints
each figure of the ``on`` worker beside the ``off`` worker's and writes a JSON report
with the ratios. See ``loadtest/README.md``.
"""

from __future__ import annotations

import sys
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

from loadtest.common.clients import raise_fd_limit
from loadtest.common.harness import run_benchmark
from loadtest.common.report import Figure, format_table
from loadtest.common.servers import ServerProcess, tail_on_error, worker_argv
from loadtest.common.stream_load import measure_streaming, warnings_for
from loadtest.metrics_cost.config import MetricsCostConfig, build_parser, resolve_config

MODES = ("on", "off")


def start_worker(mode: str, config: MetricsCostConfig, log_dir: Path) -> ServerProcess:
    """A fresh worker with ``--metrics MODE``, paced like every streaming benchmark."""
    argv = worker_argv(
        decode_rate=config.decode_rate,
        answer_tokens=config.answer_tokens,
        sessions=config.sessions,
        extra=[*config.worker_args, f"--metrics={mode}"],
    )
    return ServerProcess.launch(f"metrics-{mode}", argv, log_dir)


def scrape_size(server: ServerProcess) -> int:
    """Bytes of the worker's ``/metrics`` (0 with metrics off): the scrape works."""
    url = server.url.replace("ws://", "http://") + "/metrics"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return len(response.read())
    except OSError:
        return 0


def run(config: MetricsCostConfig, log_dir: Path) -> dict[str, Any]:
    """``rounds`` rounds of the load on each worker, alternating, each worker fresh."""
    rounds: list[dict[str, Any]] = []
    for index in range(config.rounds):
        results: dict[str, Any] = {}
        for mode in MODES if index % 2 == 0 else reversed(MODES):
            print(f"[round {index + 1}/{config.rounds}] metrics {mode} ...", flush=True)
            with start_worker(mode, config, log_dir) as server, tail_on_error(server):
                results[mode] = measure_streaming(server, config)
                results[mode]["metrics_bytes"] = scrape_size(server)
        rounds.append(results)
    return {"rounds": rounds, "stream": {mode: _mean(rounds, mode) for mode in MODES}}


def _mean(rounds: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """The figures of ``mode`` averaged over the rounds (the warnings read these)."""
    last = dict(rounds[-1][mode])
    for key in ("tokens_per_s", "server_cpu_us_per_token"):
        values = [r[mode][key] for r in rounds if r[mode][key] is not None]
        last[key] = round(fmean(values), 2) if values else None
    last["interrupt_ms"] = {
        q: _mean_of([r[mode]["interrupt_ms"][q] for r in rounds]) for q in ("p50", "p99")
    }
    return last


def _mean_of(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(fmean(present), 3) if present else None


def build_figures(results: dict[str, Any]) -> list[Figure]:
    """Each figure with metrics on beside the same figure with metrics off."""
    on, off = results["stream"]["on"], results["stream"]["off"]
    return [
        Figure(
            "worker CPU per delivered token, metrics on",
            "us",
            on["server_cpu_us_per_token"],
            "metrics off",
            off["server_cpu_us_per_token"],
        ),
        Figure(
            "delivered, metrics on",
            "tokens/s",
            on["tokens_per_s"],
            "metrics off",
            off["tokens_per_s"],
        ),
        Figure(
            "interrupt->done p50, metrics on",
            "ms",
            on["interrupt_ms"]["p50"],
            "metrics off",
            off["interrupt_ms"]["p50"],
        ),
    ]


def print_summary(config: MetricsCostConfig, report: dict[str, Any], figures: list[Figure]) -> None:
    """The table, and what the per-round CPU figures were."""
    print()
    print(
        f"metrics cost: {config.sessions} streaming sessions at {config.decode_rate:g} tokens/s, "
        f"{config.rounds} round(s) of {config.duration:g} s per worker"
    )
    print(format_table(figures, value_header="value"))
    for index, results in enumerate(report["results"]["rounds"]):
        cells = ", ".join(
            f"{mode} {results[mode]['server_cpu_us_per_token']} us/token" for mode in MODES
        )
        print(f"round {index + 1}: {cells}")
    for warning in report["warnings"]:
        print(f"warning: {warning}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    config = resolve_config(build_parser().parse_args(argv))
    raise_fd_limit()
    return run_benchmark(
        "metrics_cost",
        config,
        run=lambda log_dir: run(config, log_dir),
        figures_of=build_figures,
        warnings_of=lambda results: warnings_for(config, {"stream": results["stream"]}),
        print_summary=lambda report, figures: print_summary(config, report, figures),
    )


if __name__ == "__main__":
    sys.exit(main())
