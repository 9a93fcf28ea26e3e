"""The servers a run loads: a URL given, or a local worker; and the local baseline."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from loadtest.command.options import Settings
from loadtest.common.config import PREFILL_MS
from loadtest.common.servers import ServerProcess, worker_argv


@dataclass(slots=True)
class Target:
    """What one phase loads: its URL, and the process when this command started it."""

    name: str
    url: str
    process: ServerProcess | None

    def rss(self) -> int | None:
        """The server's RSS when it is local and alive, else ``None``."""
        if self.process is None:
            return None
        try:
            return self.process.rss_bytes()
        except Exception:  # a dead process has no RSS; the run reports the rest
            return None


def bare_argv(settings: Settings) -> list[str]:
    """The baseline: one frame per token at the same rate, length and prefill."""
    return [
        sys.executable,
        "-m",
        "loadtest.command.bare_server",
        "--port=0",
        f"--decode-rate={settings.rate}",
        f"--answer-tokens={settings.answer_tokens}",
        f"--prefill-ms={PREFILL_MS}",
    ]


@contextmanager
def local(name: str, argv: list[str], log_dir: Path) -> Iterator[Target]:
    """A server subprocess on a free loopback port, stopped for sure at the end."""
    process = ServerProcess.launch(name, argv, log_dir)
    try:
        yield Target(name, process.url, process)
    finally:
        process.stop()


SCENARIO_WORKER_ARGS = {
    # Small buffers so a reader that stops fills the outbox within seconds, not minutes.
    "slow-clients": ["--outbox-max-bytes=65536", "--socket-send-buffer=16384"],
    "mixed": ["--outbox-max-bytes=65536", "--socket-send-buffer=16384"],
}
"""Worker flags a scenario's local worker gets before ``--worker-arg``'s."""


@contextmanager
def under_test(settings: Settings, scenario: str, log_dir: Path) -> Iterator[Target]:
    """``--url``, else a fresh ``wsserver serve`` like the baseline (same rate and length)."""
    if settings.url:
        yield Target("target", settings.url, None)
        return
    argv = worker_argv(
        decode_rate=settings.rate,
        answer_tokens=settings.answer_tokens,
        sessions=settings.sessions,
        extra=[*SCENARIO_WORKER_ARGS.get(scenario, []), *settings.worker_args],
    )
    with local("worker", argv, log_dir) as target:
        yield target


@contextmanager
def baseline(settings: Settings, log_dir: Path) -> Iterator[Target]:
    """The bare server, always local (also when ``--url`` loads a remote target)."""
    with local("bare", bare_argv(settings), log_dir) as target:
        yield target
