"""The Redis deployments the benchmark compares: one redis-server, and a Redis Cluster of
three primaries with a replica each, on free loopback ports (no persistence)."""

from __future__ import annotations

import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis

from loadtest.common.redis_process import redis_binary


class NodesFailed(RuntimeError):
    """A redis-server or the cluster could not be started."""


def free_cluster_port() -> int:
    """A free loopback port whose cluster bus port (+10000, fixed in Redis 6) is free too.

    The kernel's ephemeral ports lie above 32768, where +10000 may pass 65535: pick
    below that instead, at random, and check both by binding them.
    """
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20000, 30000)
        try:
            with socket.socket() as first, socket.socket() as second:
                first.bind(("127.0.0.1", port))
                second.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        return port
    raise NodesFailed("no free pair of ports for a cluster node")


class RedisNodes:
    """``count`` redis-servers (cluster nodes when ``cluster``), stopped by pid."""

    def __init__(self, *, cluster: bool) -> None:
        self.cluster = cluster
        self.ports = [free_cluster_port() for _ in range(6 if cluster else 1)]
        self.folder = Path(tempfile.mkdtemp(prefix="wss-bench-redis-"))
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        """What ``wsserver serve --store`` takes."""
        if self.cluster:
            return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports)
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def __enter__(self) -> RedisNodes:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _start(self) -> None:
        for port in self.ports:
            flags = ["--port", str(port), "--bind", "127.0.0.1", "--protected-mode", "no"]
            flags += ["--save", "", "--appendonly", "no", "--maxclients", "10000"]
            if self.cluster:
                flags += ["--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf"]
            self.processes.append(
                subprocess.Popen(
                    [redis_binary(), *flags],
                    cwd=self.folder,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        self._until(lambda client: bool(client.ping()))
        if not self.cluster:
            return
        cli = Path(redis_binary()).parent / "redis-cli"
        created = subprocess.run(
            [
                str(cli) if cli.exists() else "redis-cli",
                *("--cluster", "create", *(f"127.0.0.1:{port}" for port in self.ports)),
                *("--cluster-replicas", "1", "--cluster-yes"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if created.returncode != 0:
            raise NodesFailed(f"redis-cli --cluster create failed: {created.stdout[-2000:]}")
        self._until(lambda client: client.execute_command("CLUSTER INFO")["cluster_state"] == "ok")

    def _until(self, check: Callable[[redis.Redis], object], timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if all(check(self._client(port)) for port in self.ports):
                    return
            except (redis.RedisError, OSError, KeyError):
                pass
            time.sleep(0.05)
        raise NodesFailed("redis nodes not ready in time")

    @staticmethod
    def _client(port: int) -> redis.Redis:
        return redis.Redis(port=port, socket_timeout=5, socket_connect_timeout=5)

    def commands_processed(self) -> int:
        """Commands every primary has run so far (scripts' inner calls included;
        replicas' applied writes not counted)."""
        total = 0
        for port in self.ports:
            client = self._client(port)
            if client.info("replication")["role"] == "master":
                total += int(client.info("stats")["total_commands_processed"])
        return total

    def flush(self) -> None:
        for port in self.ports:
            client = self._client(port)
            if client.info("replication")["role"] == "master":
                client.flushall()

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait(10)
        self.processes = []
        shutil.rmtree(self.folder, ignore_errors=True)
