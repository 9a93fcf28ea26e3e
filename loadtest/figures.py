"""What a run's results say: headline figures, warnings, the printed summary."""

from __future__ import annotations

import hashlib
import os
import platform
import resource
import subprocess
from importlib.metadata import version
from typing import Any

import psutil

from loadtest.config import BenchConfig, expected_duty
from loadtest.report import Figure, compared, format_table
from loadtest.servers import REPO_ROOT


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


def warnings_for(config: BenchConfig, results: dict[str, dict[str, Any]]) -> list[str]:
    """Things that make a figure less trustworthy, in words."""
    notes: list[str] = []
    for phase, by_server in results.items():
        for name, r in by_server.items():
            wanted = config.sessions if phase == "stream" else config.idle_sessions
            if r["sessions_opened"] < wanted:
                notes.append(
                    f"{phase}/{name}: opened {r['sessions_opened']} of {wanted} sessions "
                    f"{r['connect_failures']}"
                )
            if phase != "stream":
                continue
            asked = r["offered_tokens_per_s"] * expected_duty(config)
            if r["tokens_per_s"] < 0.9 * asked:
                notes.append(
                    f"stream/{name}: delivered {r['tokens_per_s']:,.0f} tokens/s, under 90% of "
                    f"what the sessions ask for (~{asked:,.0f}): the server is saturated"
                )
            if r["cpu"]["clients_pct_of_core"] >= 90 * config.clients:
                notes.append(f"stream/{name}: client processes were CPU-bound; figure is a floor")
            for key in ("unanswered_interrupts", "unanswered_pings", "dropped_sessions"):
                if r[key]:
                    notes.append(f"stream/{name}: {key} = {r[key]}")
            if r["errors"]:
                notes.append(f"stream/{name}: error events {r['errors']}")
    if (os.cpu_count() or 1) <= 2:
        notes.append(
            f"only {os.cpu_count()} CPU(s): servers, {config.clients} client process(es) and "
            "the runner share them, so both servers are measured with less than the machine"
        )
    return notes


def _git_state() -> dict[str, Any]:
    """Commit and dirtiness of the tree under test (the worker runs from it)."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10, check=True
        )
        return done.stdout.strip()

    try:
        changed = [line.split(maxsplit=1)[-1] for line in git("status", "--porcelain").splitlines()]
        diff = git("diff", "HEAD")
        return {
            "commit": git("rev-parse", "HEAD"),
            "dirty": bool(changed),
            # Others may be editing the tree: name what differed from the commit, and how.
            "changed_files": changed,
            "diff_sha1": hashlib.sha1(diff.encode()).hexdigest() if diff else None,
        }
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def environment() -> dict[str, Any]:
    """The machine, versions and source tree the figures came from."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "websockets": version("websockets"),
        "nofile_limit": [soft, hard],
        "git": _git_state(),
    }


def print_summary(config: BenchConfig, report: dict[str, Any], figures: list[Figure]) -> None:
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
