"""Slow-consumer benchmark: worker RSS per stalled session against the configured bounds.

``python -m loadtest.slow_consumer`` starts ``wsserver serve`` as a
subprocess three times, each fresh, and opens N sessions on it:

1. **idle** (baseline): sessions opened and left idle;
2. **reading** (baseline): each asks for a long answer and reads it;
3. **stalled**: each asks for a long answer and never reads a byte again (small
   receive buffer, reading paused), so the worker's writer backs up, the
   outbox fills, the connection is closed 4000 and the detached session keeps
   generating into its replay buffer for the grace period.

For each it samples the worker's RSS every second for ``--duration`` seconds and
reports the growth per session, at the end and at its peak, and how fast it
still grew over the last third (a bound holds when that is about 0). The stalled
figure is printed beside the configured per-session bound (outbox bound +
replay bound + write limit) and beside the two baselines, as ratios. See
``loadtest/README.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from loadtest.common.clients import SESSION_START, raise_fd_limit
from loadtest.common.config import BenchmarkConfig, add_report_flags, benchmark_parser, report_path
from loadtest.common.harness import run_benchmark
from loadtest.common.report import Figure, format_table
from loadtest.common.servers import ServerProcess, tail_on_error, worker_argv
from loadtest.common.wire import LeanConnection
from wsserver.engine.simulated import _VOCABULARY

PHASES = ("idle", "reading", "stalled")
CREATE = json.dumps({"type": "response.create", "input": "tell me a very long story"})
ACK_EVERY = 32
CHARS_PER_TOKEN = sum(len(word) + 1 for word in _VOCABULARY) / len(_VOCABULARY)
"""The simulated engine's text: a word and a space per token, on average."""
_SEQ = re.compile(r'"seq":(\d+)')


@dataclass(frozen=True, slots=True, kw_only=True)
class SlowConsumerConfig(BenchmarkConfig):
    """What one run measures."""

    sessions: int = 50
    answer_tokens: int = 100_000
    decode_rate: float = 300.0
    duration_s: float = 60.0
    outbox_max_bytes: int = 64 * 1024
    replay_max_bytes: int = 1 << 20
    write_limit: int = 64 * 1024
    socket_send_buffer: int = 16 * 1024
    client_rcvbuf: int = 4096

    @property
    def bound_bytes(self) -> int:
        """What one session may hold by configuration: outbox, replay buffer, socket buffer."""
        return self.outbox_max_bytes + self.replay_max_bytes + self.write_limit


def _worker(config: SlowConsumerConfig, log_dir: Path, phase: str) -> ServerProcess:
    argv = worker_argv(
        decode_rate=config.decode_rate,
        answer_tokens=config.answer_tokens,
        sessions=config.sessions,
        extra=[
            f"--max-output-tokens={config.answer_tokens}",
            f"--outbox-max-bytes={config.outbox_max_bytes}",
            f"--replay-max-bytes={config.replay_max_bytes}",
            f"--write-limit={config.write_limit}",
            f"--socket-send-buffer={config.socket_send_buffer}",
            # The stalled sessions must outlive the measurement, detached or not.
            f"--grace-period={config.duration_s + 30}",
            f"--resume-window={config.duration_s + 60}",
            *config.worker_args,
        ],
    )
    return ServerProcess.launch(f"worker-{phase}", argv, log_dir)


async def _connect(url: str, rcvbuf: int | None) -> LeanConnection:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        # Set before connecting, so the window the worker sees is small from the start.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (host, port))
    _, connection = await loop.create_connection(lambda: LeanConnection(host, port, "/"), sock=sock)
    await asyncio.wait_for(asyncio.shield(connection.opened), 10)
    connection.send_text(SESSION_START)
    ready = await asyncio.wait_for(asyncio.shield(connection.first_text), 10)
    if not ready.startswith('{"type":"session.ready"'):
        raise RuntimeError(f"expected session.ready, got {ready[:160]}")
    return connection


async def _measure(server: ServerProcess, config: SlowConsumerConfig, phase: str) -> dict[str, Any]:
    rss_before = server.settled_rss()
    stalled = phase == "stalled"
    connections: list[LeanConnection] = []
    received = [0]

    def reader(connection: LeanConnection) -> Callable[[str], None]:
        frames = [0]

        def on_text(frame: str) -> None:
            received[0] += len(frame)
            frames[0] += 1
            # Ack every 32 events, as the SDK does, so the replay buffer is trimmed.
            if frames[0] % ACK_EVERY == 0 and (match := _SEQ.search(frame)) is not None:
                connection.send_text(f'{{"type":"ack","seq":{match.group(1)}}}')

        return on_text

    for _ in range(config.sessions):
        connection = await _connect(server.url, config.client_rcvbuf if stalled else None)
        connection.on_text = reader(connection)
        connections.append(connection)
    for connection in connections:
        if phase == "idle":
            continue
        connection.send_text(CREATE)
        if stalled and connection.transport is not None:
            connection.transport.pause_reading()  # never reads a byte again
    samples: list[tuple[float, int]] = []
    began = time.monotonic()
    while (elapsed := time.monotonic() - began) < config.duration_s:
        await asyncio.sleep(1.0)
        samples.append((round(elapsed, 1), server.rss_bytes()))
    stats = server.stats()
    server.check_alive()
    server.stop()  # before the clients go: the teardown is not measured
    for connection in connections:
        if connection.transport is not None:
            connection.transport.abort()
    n = len(connections)
    growth = [rss - rss_before for _, rss in samples]
    stats = stats or {}
    third = samples[len(samples) * 2 // 3]
    last = samples[-1]
    slope = (last[1] - third[1]) / max(0.1, last[0] - third[0])
    tokens = int(stats.get("engine", {}).get("tokens_generated", 0))
    return {
        "sessions": n,
        "rss_before_mib": round(rss_before / 2**20, 2),
        "rss_after_mib": round(last[1] / 2**20, 2),
        "kib_per_session": round(growth[-1] / 1024 / n, 1),
        "kib_per_session_peak": round(max(growth) / 1024 / n, 1),
        "kib_per_session_per_s_last_third": round(slope / 1024 / n, 2),
        # The running answer's text is held once, and not part of the three bounds.
        "answer_text_kib_per_session": round(tokens * CHARS_PER_TOKEN / 1024 / n, 1),
        "client_bytes_received": received[0],
        "rss_samples_mib": [(t, round(rss / 2**20, 2)) for t, rss in samples],
        "server_stats": stats,
    }


def run(config: SlowConsumerConfig, log_dir: Path) -> dict[str, Any]:
    """Each phase on a fresh worker, stopped right after."""
    results: dict[str, Any] = {}
    for phase in PHASES:
        print(f"[{phase}] {config.sessions} sessions, {config.duration_s:.0f} s ...", flush=True)
        with _worker(config, log_dir, phase) as server, tail_on_error(server):
            results[phase] = asyncio.run(_measure(server, config, phase))
    results["bound_kib_per_session"] = round(config.bound_bytes / 1024, 1)
    results["bound_and_text_kib_per_session"] = round(
        results["bound_kib_per_session"] + results["stalled"]["answer_text_kib_per_session"], 1
    )
    return results


def figures_of(results: dict[str, Any]) -> list[Figure]:
    """Stalled RSS per session beside the configured bound and the two baselines."""
    stalled = results["stalled"]
    bound = results["bound_kib_per_session"]
    return [
        Figure(
            "RSS per stalled session above an idle one, peak",
            "KiB",
            round(stalled["kib_per_session_peak"] - results["idle"]["kib_per_session"], 1),
            "configured bound (outbox + replay + write limit)",
            bound,
        ),
        Figure(
            "RSS per stalled session above an idle one, peak",
            "KiB",
            round(stalled["kib_per_session_peak"] - results["idle"]["kib_per_session"], 1),
            "configured bound + the answer's text so far",
            results["bound_and_text_kib_per_session"],
        ),
        Figure(
            "RSS per stalled session",
            "KiB",
            stalled["kib_per_session"],
            "RSS per idle session",
            results["idle"]["kib_per_session"],
        ),
        Figure(
            "RSS per stalled session",
            "KiB",
            stalled["kib_per_session"],
            "RSS per reading session",
            results["reading"]["kib_per_session"],
        ),
        Figure(
            "RSS growth per stalled session, last third",
            "KiB/s",
            stalled["kib_per_session_per_s_last_third"],
            "same, reading session",
            results["reading"]["kib_per_session_per_s_last_third"],
        ),
    ]


def warnings_of(results: dict[str, Any]) -> list[str]:
    """Notes on figures that need care."""
    notes = []
    stalled = results["stalled"]
    above_idle = stalled["kib_per_session_peak"] - results["idle"]["kib_per_session"]
    if above_idle > results["bound_and_text_kib_per_session"]:
        notes.append("stalled sessions held more than the configured bound")
    if stalled["kib_per_session_per_s_last_third"] > 1.0:
        notes.append("stalled sessions were still growing at the end of the run")
    return notes


def print_summary(report: dict[str, Any], figures: list[Figure]) -> None:
    """The table, then per phase what the worker held."""
    print()
    print(format_table(figures))
    print()
    for phase in PHASES:
        r = report["results"][phase]
        stats = r["server_stats"] or {}
        print(
            f"{phase:>8}: {r['sessions']} sessions, RSS {r['rss_before_mib']} -> "
            f"{r['rss_after_mib']} MiB, {r['kib_per_session']} KiB/session "
            f"(peak {r['kib_per_session_peak']}), last third "
            f"{r['kib_per_session_per_s_last_third']} KiB/s/session, attached "
            f"{stats.get('attached')}, outbox peak {stats.get('outbox_peak_bytes_max')} B"
        )
    for note in report["warnings"]:
        print(f"warning: {note}")


def build_parser() -> argparse.ArgumentParser:
    """Command-line flags."""
    defaults = SlowConsumerConfig()
    parser = benchmark_parser("slow_consumer", __doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=defaults.sessions)
    parser.add_argument("--answer-tokens", type=int, default=defaults.answer_tokens)
    parser.add_argument("--decode-rate", type=float, default=defaults.decode_rate)
    parser.add_argument("--duration", type=float, default=defaults.duration_s, help="seconds")
    parser.add_argument("--outbox-max-bytes", type=int, default=defaults.outbox_max_bytes)
    parser.add_argument("--replay-max-bytes", type=int, default=defaults.replay_max_bytes)
    parser.add_argument("--write-limit", type=int, default=defaults.write_limit)
    parser.add_argument("--socket-send-buffer", type=int, default=defaults.socket_send_buffer)
    parser.add_argument("--quick", action="store_true", help="20 sessions, 30 s a phase")
    add_report_flags(parser, "extra --FLAG=VALUE for the worker")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args = build_parser().parse_args(argv)
    config = SlowConsumerConfig(
        quick=args.quick,
        sessions=20 if args.quick else args.sessions,
        answer_tokens=args.answer_tokens,
        decode_rate=args.decode_rate,
        duration_s=30.0 if args.quick else args.duration,
        outbox_max_bytes=args.outbox_max_bytes,
        replay_max_bytes=args.replay_max_bytes,
        write_limit=args.write_limit,
        socket_send_buffer=args.socket_send_buffer,
        worker_args=args.worker_arg,
        report=report_path(args, "slow-consumer"),
    )
    raise_fd_limit()
    return run_benchmark(
        "slow-consumer",
        config,
        run=lambda log_dir: run(config, log_dir),
        figures_of=figures_of,
        warnings_of=warnings_of,
        print_summary=print_summary,
        git_before_run=True,
    )


if __name__ == "__main__":
    sys.exit(main())
