"""Servers under test, each a real subprocess on a free loopback port."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from loadtest.common.processes import ChildProcess

_LISTENING = re.compile(r"listening on (ws://127\.0\.0\.1:\d+)")
REPO_ROOT = Path(__file__).resolve().parents[2]


class ServerFailed(RuntimeError):
    """A server did not start, or died during the run."""


class ServerProcess(ChildProcess):
    """Start a server command, find its URL in its output, stop it for sure.

    The command must print ``listening on ws://127.0.0.1:PORT`` once it
    accepts connections (``wsserver serve`` and the bare server both do).
    Output goes to a log file, so a chatty server can never block on a pipe.
    """

    signal_group = True  # it leads a session of its own (``start_new_session``)

    def __init__(self, name: str, argv: list[str], log_dir: Path) -> None:
        super().__init__(name)
        self.argv = argv
        self.log_path = log_dir / f"{name}-{int(time.time() * 1000)}.log"
        self.url = ""

    @classmethod
    def launch(cls, name: str, argv: list[str], log_dir: Path) -> ServerProcess:
        """A started server (``with`` it, or call :meth:`stop`)."""
        server = cls(name, argv, log_dir)
        server.start()
        return server

    def __enter__(self) -> ServerProcess:
        if self._popen is None:
            self.start()
        return self

    def start(self, timeout_s: float = 20.0) -> None:
        """Launch the server and wait until it prints its URL (once per instance)."""
        if self._popen is not None:
            raise RuntimeError(f"{self.name} was already started")
        # WSSERVER_* variables would silently change the worker's settings.
        env = {k: v for k, v in os.environ.items() if not k.startswith("WSSERVER_")}
        env["PYTHONUNBUFFERED"] = "1"
        with self.log_path.open("wb") as log:
            self._popen = subprocess.Popen(
                self.argv,
                cwd=REPO_ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._psutil = psutil.Process(self._popen.pid)
            self.url = self._wait_for_url(timeout_s)
        except BaseException:
            self.stop()
            raise

    def _wait_for_url(self, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            match = _LISTENING.search(self.log_path.read_text(errors="replace"))
            if match:
                return match.group(1)
            self.check_alive()
            time.sleep(0.05)
        raise ServerFailed(f"{self.name} printed no url within {timeout_s:.0f}s\n{self.log_tail()}")

    def check_alive(self) -> None:
        """Raise :class:`ServerFailed` if the process has exited."""
        if self._popen is not None and self._popen.poll() is not None:
            raise ServerFailed(
                f"{self.name} exited with {self._popen.returncode}\n{self.log_tail()}"
            )

    def rss_bytes(self) -> int:
        """Resident set size now."""
        assert self._psutil is not None, "server not started"
        return int(self._psutil.memory_info().rss)

    def settled_rss(self, max_wait_s: float = 10.0) -> int:
        """RSS once it stops moving (two readings 0.5 s apart within 0.5%), bounded in time."""
        deadline = time.monotonic() + max_wait_s
        previous = self.rss_bytes()
        while time.monotonic() < deadline:
            time.sleep(0.5)
            current = self.rss_bytes()
            if abs(current - previous) <= previous * 0.005:
                return current
            previous = current
        return previous

    def stats(self, timeout_s: float = 5.0) -> dict[str, Any] | None:
        """``GET /stats`` as JSON, or ``None`` when it does not answer in time."""
        http_url = self.url.replace("ws://", "http://", 1) + "/stats"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(http_url, timeout=timeout_s) as response:
                body: dict[str, Any] = json.loads(response.read())
                return body
        except (OSError, ValueError):
            return None

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the server wrote."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


@contextmanager
def tail_on_error(*servers: ServerProcess) -> Iterator[None]:
    """On an error inside, print the last lines each server logged, then let it through."""
    try:
        yield
    except Exception:
        for server in servers:
            print(f"{server.name} log (tail):\n{server.log_tail()}", file=sys.stderr, flush=True)
        raise


def worker_argv(
    *, decode_rate: float, answer_tokens: int, sessions: int, extra: list[str]
) -> list[str]:
    """``wsserver serve`` configured like the bare server (same rate, length and prefill).

    Its engine batch fits ``sessions`` decoding at once.
    """
    return [
        sys.executable,
        "-m",
        "wsserver.cli.main",
        "serve",
        "--host=127.0.0.1",
        "--port=0",
        f"--decode-rate={decode_rate}",
        f"--answer-tokens={answer_tokens}",
        # The engine's batch must not cap the test: every session decodes at once.
        f"--engine-slots={max(256, sessions)}",
        # A growing conversation would lengthen the worker's prefill run after run;
        # keep it at the engine's fixed base (20 ms), which the bare server copies.
        "--prefill-per-token-ms=0",
        "--log-level=WARNING",
        # One process, measured by its pid (with a shared store the default is a group).
        "--workers=1",
        *extra,
    ]


def bare_argv(*, decode_rate: float, answer_tokens: int, prefill_ms: float) -> list[str]:
    """The baseline server with the same pacing."""
    return [
        sys.executable,
        "-m",
        "loadtest.stream.bare_server",
        "--host=127.0.0.1",
        "--port=0",
        f"--decode-rate={decode_rate}",
        f"--answer-tokens={answer_tokens}",
        f"--prefill-ms={prefill_ms}",
    ]


def log_warnings(server: ServerProcess, keep: int = 5) -> dict[str, Any]:
    """Warnings and errors the worker logged (``--log-level=WARNING``): count and first few."""
    try:
        lines = server.log_path.read_text(errors="replace").splitlines()
    except OSError:
        return {"count": None, "first": []}
    marked = [ln for ln in lines if " WARNING " in ln or " ERROR " in ln or "Traceback" in ln]
    return {"count": len(marked), "first": marked[:keep]}
