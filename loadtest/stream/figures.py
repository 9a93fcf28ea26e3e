"""What a streaming run's results say: headline figures and the printed summary."""

from __future__ import annotations

import os
from typing import Any

from loadtest.common.report import Figure, compared, format_table
from loadtest.stream.config import StreamConfig


def build_figures(results: dict[str, dict[str, Any]]) -> list[Figure]:
    """Every headline figure beside the bare server's figure from this run."""
    figures: list[Figure] = []
    stream = results.get("stream")
    if stream:
        worker, bare = stream["worker"], stream["bare"]
        figures += [
            compared(
                f"delivered, {worker['sessions_opened']} streaming sessions",
                "tokens/s",
                "bare tokens/s",
                worker,
                bare,
                "tokens_per_s",
            ),
            compared(
                "server CPU per delivered token",
                "us",
                "bare CPU per token",
                worker,
                bare,
                "server_cpu_us_per_token",
            ),
        ]
        for q in ("p50", "p99"):
            figures.append(
                Figure(
                    f"interrupt->done {q}",
                    "ms",
                    worker["interrupt_ms"][q],
                    f"bare ping RTT {q}",
                    bare["ping_ms"][q],
                )
            )
            for label, key in (("ping RTT", "ping_ms"), ("interrupt->done", "interrupt_ms")):
                figures.append(
                    compared(f"{label} {q}", "ms", f"bare {label} {q}", worker, bare, key, q)
                )
    idle = results.get("idle")
    if idle:
        figures.append(
            compared(
                f"RSS per idle session, {idle['worker']['sessions_opened']} sessions",
                "KiB",
                "bare KiB/session",
                idle["worker"],
                idle["bare"],
                "kib_per_session",
            )
        )
    return figures


def print_summary(config: StreamConfig, report: dict[str, Any], figures: list[Figure]) -> None:
    """The human-readable part."""
    print(
        f"\nstream benchmark: {config.sessions} streaming / {config.idle_sessions} idle sessions,"
        f" {config.decode_rate:g} tokens/s per answer, {config.answer_tokens} tokens per answer,"
        f" 1 in {config.interrupt_every} answers interrupted after {config.interrupt_after} tokens,"
        f" {config.clients} client processes, {os.cpu_count()} CPUs\n"
    )
    print(format_table(figures))
    stream = report["results"].get("stream", {})
    for name, r in stream.items():
        cpu = r["cpu"]
        print(
            f"\n{name}: frames/s {r['frames_per_s']:,.0f} (tokens/frame {r['tokens_per_frame']}),"
            f" decode steps/s {r['decode_steps_per_s']}, server CPU {cpu['server_pct_of_core']}%,"
            f" clients CPU {cpu['clients_pct_of_core']}%, machine busy {cpu['machine_busy_pct']}%,"
            f" samples: {r['interrupt_ms']['count']} interrupts, {r['ping_ms']['count']} pings,"
            f" done: {r['done_statuses']}"
        )
    for name, r in report["results"].get("idle", {}).items():
        print(f"\n{name} idle: RSS {r['rss_before_mib']} -> {r['rss_after_mib']} MiB")
    for note in report["warnings"]:
        print(f"\nnote: {note}")
