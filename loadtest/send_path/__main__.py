"""Send-path benchmark: one frame per token through three servers, in one run.

``python -m loadtest.send_path`` runs the streaming load of :mod:`loadtest.stream`
(N sessions, one ~80-byte JSON frame per token on a shared decode clock, 1 in 3
answers interrupted, a ping per session per second) against, round after round:

* ``bare``: the stream bench's bare ``websockets`` server (the baseline);
* ``worker``: ``wsserver serve`` as deployed (``--ws-engine websockets``);
* ``fast``: ``wsserver serve --ws-engine fast``.

Each server is fresh for each round, and every ratio is taken against the bare
server of the same round. Each round also measures the session work per token
with no socket at all (:mod:`loadtest.send_path.session_work`, as many sessions):
its ratio to the bare server's CPU per token is the part of a bare server's
whole cost that a worker spends before any send path, which bounds what a
faster send path can gain. And it measures the socket floor
(:mod:`loadtest.send_path.socket_floor`: one frame per token per connection
written to the transport by a server with no WebSocket code, on the round's
decode clock): session work plus floor is the least a worker's token can cost,
so the bare server's CPU per token over that sum is the most tokens per core any
send path can reach against it. It prints the figures and writes a JSON report.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadtest.common.clients import raise_fd_limit
from loadtest.common.config import report_path
from loadtest.common.harness import run_benchmark
from loadtest.common.report import Figure, format_table
from loadtest.common.servers import ServerProcess, tail_on_error
from loadtest.common.stream_load import measure_streaming, warnings_for
from loadtest.stream.config import StreamConfig, build_parser, resolve_config
from loadtest.stream.phases import start_server

VARIANTS = ("bare", "worker", "fast")


def _launch(name: str, config: StreamConfig, log_dir: Path) -> ServerProcess:
    if name == "fast":
        fast = dataclasses.replace(config, worker_args=[*config.worker_args, "--ws-engine=fast"])
        return start_server("worker", fast, log_dir)
    return start_server(name, config, log_dir)


def _measure_apart(module: str, config: StreamConfig, *flags: str) -> dict[str, Any]:
    """One of the socket-free or WebSocket-free figures, in a fresh process (its own
    loop and heap), over the round's session count."""
    seconds = max(1.0, min(config.duration, 5.0))
    command = [sys.executable, "-m", module, "--sessions", str(config.sessions)]
    command += ["--seconds", str(seconds), *flags]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=seconds + 120, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def measure_session_work(config: StreamConfig) -> dict[str, Any]:
    """The session work per token with no socket (:mod:`loadtest.send_path.session_work`)."""
    return _measure_apart("loadtest.send_path.session_work", config)


def measure_socket_floor(config: StreamConfig) -> dict[str, Any]:
    """One frame per token per connection with no WebSocket code, on the round's decode
    clock (:mod:`loadtest.send_path.socket_floor`)."""
    rate = str(config.decode_rate)
    return _measure_apart("loadtest.send_path.socket_floor", config, "--decode-rate", rate)


def run(config: StreamConfig, rounds: int, log_dir: Path) -> dict[str, Any]:
    """Every variant once per round, alternated, each on a fresh server."""
    results: dict[str, Any] = {"rounds": []}
    for number in range(1, rounds + 1):
        this_round: dict[str, Any] = {}
        for name in VARIANTS:
            print(f"[round {number}] {name} ...", flush=True)
            with _launch(name, config, log_dir) as server, tail_on_error(server):
                this_round[name] = measure_streaming(server, config)
        print(f"[round {number}] session work, no socket ...", flush=True)
        this_round["session_work"] = measure_session_work(config)
        print(f"[round {number}] socket floor, no WebSocket code ...", flush=True)
        this_round["socket_floor"] = measure_socket_floor(config)
        this_round["floor"] = _floor_of(this_round)
        results["rounds"].append(this_round)
    return results


def _floor_of(this_round: dict[str, Any]) -> dict[str, Any]:
    """The least a worker's token can cost in this round (its session work plus the
    socket floor), and the most tokens per core that leaves against the bare server."""
    work = this_round["session_work"]["cpu_us_per_frame"]
    socket = this_round["socket_floor"]["cpu_us_per_frame"]
    bare = this_round["bare"]["server_cpu_us_per_token"]
    if not work or not socket:
        return {"cpu_us_per_token": None, "most_tokens_per_core_vs_bare": None}
    least = round(work + socket, 2)
    return {
        "cpu_us_per_token": least,
        "most_tokens_per_core_vs_bare": round(bare / least, 2) if bare else None,
    }


def _ratios(results: dict[str, Any], name: str, base: str, key: str) -> list[float]:
    out = []
    for r in results["rounds"]:
        value, baseline = r[name][key], r[base][key]
        if value is not None and baseline:
            out.append(value / baseline)
    return out


def build_figures(results: dict[str, Any]) -> list[Figure]:
    """Medians over the rounds; each ratio against the same round's baseline."""

    def median_of(name: str, *keys: str) -> float | None:
        values = []
        for r in results["rounds"]:
            value: Any = r[name]
            for key in keys:
                value = value[key] if value is not None else None
            if value is not None:
                values.append(value)
        return round(statistics.median(values), 2) if values else None

    figures = []
    for name, base in (("fast", "bare"), ("fast", "worker"), ("worker", "bare")):
        figures.append(
            Figure(
                f"{name}: delivered tokens/s",
                "tokens/s",
                median_of(name, "tokens_per_s"),
                f"{base} tokens/s",
                median_of(base, "tokens_per_s"),
            )
        )
        figures.append(
            Figure(
                f"{name}: server CPU per token",
                "us",
                median_of(name, "server_cpu_us_per_token"),
                f"{base} CPU per token",
                median_of(base, "server_cpu_us_per_token"),
            )
        )
    figures.append(
        Figure(
            "session work per token, no socket",
            "us",
            median_of("session_work", "cpu_us_per_frame"),
            "bare CPU per token",
            median_of("bare", "server_cpu_us_per_token"),
        )
    )
    figures.append(
        Figure(
            "socket floor per frame, no WebSocket code",
            "us",
            median_of("socket_floor", "cpu_us_per_frame"),
            "bare CPU per token",
            median_of("bare", "server_cpu_us_per_token"),
        )
    )
    figures.append(
        Figure(
            "least a worker's token costs (work + floor)",
            "us",
            median_of("floor", "cpu_us_per_token"),
            "bare CPU per token",
            median_of("bare", "server_cpu_us_per_token"),
        )
    )
    for name in ("fast", "worker"):
        figures.append(
            Figure(
                f"{name}: interrupt->done p99",
                "ms",
                median_of(name, "interrupt_ms", "p99"),
                "bare interrupt->done p99",
                median_of("bare", "interrupt_ms", "p99"),
            )
        )
    return figures


def print_summary(results: dict[str, Any], figures: list[Figure]) -> None:
    """The table, then the per-round tokens/s ratios (same-round baselines)."""
    print(format_table(figures, value_header="measured"))
    for name, base in (("fast", "bare"), ("fast", "worker"), ("worker", "bare")):
        ratios = _ratios(results, name, base, "tokens_per_s")
        if ratios:
            print(
                f"{name}/{base} tokens/s per round: "
                + ", ".join(f"{x:.2f}" for x in ratios)
                + f" (median {statistics.median(ratios):.2f})"
            )
    shares = [
        r["session_work"]["cpu_us_per_frame"] / r["bare"]["server_cpu_us_per_token"]
        for r in results["rounds"]
        if r["session_work"]["cpu_us_per_frame"] and r["bare"]["server_cpu_us_per_token"]
    ]
    if shares:
        print(
            "session work with no socket, as a share of the bare server's CPU per token: "
            + ", ".join(f"{x:.2f}" for x in shares)
            + f"; with a send path that cost nothing, a worker would reach at most"
            f" {1 / statistics.median(shares):.1f}x the bare server's tokens per core"
        )
    ceilings = [
        r["floor"]["most_tokens_per_core_vs_bare"]
        for r in results["rounds"]
        if r["floor"]["most_tokens_per_core_vs_bare"]
    ]
    if ceilings:
        print(
            "with the kernel's send() per frame added (the socket floor), at most: "
            + ", ".join(f"{x:.2f}x" for x in ceilings)
            + " the bare server's tokens per core (per round)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: the stream bench's flags (``--quick``, ``--sessions``...) and ``--rounds``."""
    parser: argparse.ArgumentParser = build_parser()
    parser.prog = "python -m loadtest.send_path"
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three variants")
    args = parser.parse_args(argv)
    if args.report is None:
        args.report = report_path(args, "send_path")
    config = dataclasses.replace(resolve_config(args), phases=("stream",))
    raise_fd_limit()
    return run_benchmark(
        "send_path",
        config,
        run=lambda log_dir: run(config, max(1, args.rounds), log_dir),
        figures_of=build_figures,
        warnings_of=lambda results: [
            w
            for r in results["rounds"]
            for w in warnings_for(config, {"stream": {k: r[k] for k in VARIANTS}})
        ],
        print_summary=lambda report, figures: print_summary(report["results"], figures),
    )


if __name__ == "__main__":
    sys.exit(main())
