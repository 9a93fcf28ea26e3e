"""The streaming benchmark's own parts: its two servers and the idle-RSS phase."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loadtest.common.clients import ConnectPlan, idle_client_main
from loadtest.common.config import PREFILL_MS
from loadtest.common.pool import ClientPool, split
from loadtest.common.report import merge_counts
from loadtest.common.servers import ServerProcess, bare_argv, worker_argv
from loadtest.common.stream_load import require_sessions
from loadtest.stream.config import StreamConfig


def start_server(name: str, config: StreamConfig, log_dir: Path) -> ServerProcess:
    """A fresh worker or bare server, paced alike."""
    if name == "worker":
        argv = worker_argv(
            decode_rate=config.decode_rate,
            answer_tokens=config.answer_tokens,
            sessions=config.sessions,
            extra=config.worker_args,
        )
    else:
        argv = bare_argv(
            decode_rate=config.decode_rate,
            answer_tokens=config.answer_tokens,
            prefill_ms=PREFILL_MS,
        )
    return ServerProcess.launch(name, argv, log_dir)


def measure_idle(server: ServerProcess, config: StreamConfig) -> dict[str, Any]:
    """Open K idle sessions and divide the RSS growth by K."""
    rss_before = server.settled_rss()
    plans = [
        ConnectPlan(server.url, count, config.connect_concurrency)
        for count in split(config.idle_sessions, config.clients)
    ]
    with ClientPool(idle_client_main, plans) as pool:
        connected = pool.gather("connected", timeout_s=60 + config.idle_sessions / 20)
        require_sessions(server, connected)
        rss_after = server.settled_rss()
        stats = server.stats()
        server.check_alive()
        server.stop()  # before the clients close: the teardown is not measured
        pool.broadcast({"kind": "close"})
        pool.gather("closed", timeout_s=30)
    opened = sum(c["sessions"] for c in connected)
    growth = rss_after - rss_before
    return {
        "sessions_opened": opened,
        "connect_failures": merge_counts(c["failures"] for c in connected),
        "rss_before_mib": round(rss_before / 2**20, 2),
        "rss_after_mib": round(rss_after / 2**20, 2),
        "kib_per_session": round(growth / 1024 / opened, 2) if opened else None,
        "server_stats": stats,
    }
