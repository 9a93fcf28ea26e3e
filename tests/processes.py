"""Workers as real subprocesses, started the way a user starts them."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WSSERVER = [sys.executable, "-m", "wsserver.cli.main"]


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: no stray WSSERVER_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WSSERVER_")}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run_serve(*flags: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """``wsserver serve FLAGS`` to its end (one expected to refuse to start): its output."""
    return subprocess.run(
        [*WSSERVER, "serve", *flags],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=timeout,
    )


def watch_output(
    process: subprocess.Popen[str], pattern: str, on_line: Callable[[str], None] | None = None
) -> tuple[threading.Event, list[str]]:
    """Read ``process``'s stdout in a thread (``on_line`` sees each line): an event set at
    the first line matching ``pattern``, and where that match's first group (if any) goes."""
    found = threading.Event()
    groups: list[str] = []

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if on_line is not None:
                on_line(line)
            match = re.search(pattern, line)
            if match and not found.is_set():
                groups.extend(match.groups())
                found.set()

    threading.Thread(target=pump, daemon=True).start()
    return found, groups


class WorkerProcess:
    """``wsserver serve`` in a subprocess; its output is collected by a thread."""

    def __init__(self, *flags: str, name: str = "worker") -> None:
        self.flags = list(flags)
        self.name = name
        self.lines: list[str] = []
        self.url = ""
        self.process: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 20.0) -> WorkerProcess:
        self.process = subprocess.Popen(
            [*WSSERVER, "serve", "--port", "0", "--worker-id", self.name, *self._one, *self.flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=cli_env(),
        )
        found, url = watch_output(self.process, r"listening on (ws://\S+)", self.lines.append)
        if not found.wait(timeout):
            self.stop()
            raise RuntimeError(f"{self.name} did not start:\n{''.join(self.lines)}")
        self.url = url[0]
        return self

    @property
    def _one(self) -> list[str]:
        # One process (signals reach the worker itself) unless the test asks for a group:
        # with a shared store --workers defaults to one per core.
        return [] if any(f.startswith("--workers") for f in self.flags) else ["--workers", "1"]

    @property
    def http(self) -> str:
        return self.url.replace("ws://", "http://")

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        """GET an HTTP endpoint of the worker: (status, JSON body)."""
        try:
            with urllib.request.urlopen(self.http + path, timeout=5) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as exc:
            return exc.code, json.load(exc)

    def stats(self) -> dict[str, Any]:
        return self.get("/stats")[1]

    def signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            # A stopped process ignores SIGTERM until continued.
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None


async def eventually(condition: Any, timeout: float = 15.0, interval: float = 0.05) -> None:
    """Poll until ``condition()`` is truthy without blocking the loop; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(condition):
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(interval)
