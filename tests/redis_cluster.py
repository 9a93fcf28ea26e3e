"""A real Redis Cluster on loopback for tests: three primaries, one replica each.

Six ``redis-server --cluster-enabled yes`` processes in a temporary folder, joined by
``redis-cli --cluster create --cluster-replicas 1``. The node timeout is short (1 s)
so that a killed primary's replica takes over within a few seconds.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import redis
from redis.crc import key_slot

from loadtest.store_cluster.nodes import free_cluster_port
from tests.redis_server import redis_binary

NODE_TIMEOUT_MS = 1000


def redis_cli_binary() -> str:
    """The redis-cli beside the redis-server the tests use."""
    beside = Path(redis_binary()).parent / "redis-cli"
    if beside.exists():
        return str(beside)
    found = shutil.which("redis-cli")
    if found is None:
        raise RuntimeError("no redis-cli beside redis-server")
    return found


@dataclass
class ClusterNode:
    """One node process of the cluster."""

    port: int
    process: subprocess.Popen[bytes] | None = None

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=2, socket_connect_timeout=2)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


class LocalRedisCluster:
    """Six nodes on free loopback ports; ``url`` names them all as seed nodes."""

    def __init__(self, primaries: int = 3) -> None:
        self.nodes = [ClusterNode(free_cluster_port()) for _ in range(primaries * 2)]
        self.folder = Path(tempfile.mkdtemp(prefix="wss-cluster-"))

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def start(self) -> LocalRedisCluster:
        try:
            self._create()
        except BaseException:
            self.stop()
            raise
        return self

    def _create(self) -> None:
        for node in self.nodes:
            self._spawn(node)
        self._wait(lambda node: node.client().ping(), "nodes did not start")
        created = subprocess.run(
            [
                redis_cli_binary(),
                "--cluster",
                "create",
                *(f"127.0.0.1:{node.port}" for node in self.nodes),
                "--cluster-replicas",
                "1",
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if created.returncode != 0:
            raise RuntimeError(f"redis cluster: create failed: {created.stdout}{created.stderr}")
        self.wait_healthy()

    def _spawn(self, node: ClusterNode) -> None:
        folder = self.folder / str(node.port)
        folder.mkdir(exist_ok=True)
        node.process = subprocess.Popen(
            [
                redis_binary(),
                *("--port", str(node.port), "--bind", "127.0.0.1"),
                *("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
                *("--cluster-node-timeout", str(NODE_TIMEOUT_MS)),
                *("--save", "", "--appendonly", "no", "--protected-mode", "no"),
            ],
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def _wait(
        self, check: Callable[[ClusterNode], object], message: str, timeout: float = 20.0
    ) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if all(check(node) for node in self.nodes if node.alive()):
                    return
            except (redis.RedisError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis cluster: {message}")
            time.sleep(0.05)

    def wait_healthy(self, timeout: float = 20.0) -> None:
        """Every live node says the cluster is ok, and every replica has synced."""

        def healthy(node: ClusterNode) -> bool:
            client = node.client()
            if client.execute_command("CLUSTER INFO").get("cluster_state") != "ok":
                return False
            role = client.info("replication")
            return bool(role["role"] == "master" or role.get("master_link_status") == "up")

        self._wait(healthy, "not healthy in time", timeout)

    def primaries(self) -> list[ClusterNode]:
        """The live nodes that serve slots now."""
        return [
            node
            for node in self.nodes
            if node.alive() and node.client().info("replication")["role"] == "master"
        ]

    def primary_of(self, key: str) -> ClusterNode:
        """The live primary that serves ``key``'s slot now."""
        slot = key_slot(key.encode())
        for node in self.primaries():
            if slot in self.slots_of(node):
                return node
        raise RuntimeError(f"no live primary serves slot {slot}")

    @staticmethod
    def slots_of(node: ClusterNode) -> set[int]:
        """The slots a node serves, from its own line of CLUSTER NODES."""
        served: set[int] = set()
        client = node.client()
        client.set_response_callback("CLUSTER NODES", bytes.decode)
        for line in client.execute_command("CLUSTER NODES").splitlines():
            fields = line.split()
            if "myself" not in fields[2]:
                continue
            for part in fields[8:]:
                low, _, high = part.partition("-")
                if low.isdigit():
                    served.update(range(int(low), int(high or low) + 1))
        return served

    def replica_of(self, primary: ClusterNode) -> ClusterNode:
        """The live node that replicates ``primary``."""
        for node in self.nodes:
            if node is primary or not node.alive():
                continue
            info = node.client().info("replication")
            if info["role"] == "slave" and int(info["master_port"]) == primary.port:
                return node
        raise RuntimeError(f"no replica of {primary.port}")

    def kill(self, node: ClusterNode) -> None:
        """SIGKILL a node: no goodbye, no last write handed on."""
        assert node.process is not None
        node.process.send_signal(signal.SIGKILL)
        node.process.wait(10)

    def cut_off(self, replica: ClusterNode, primary: ClusterNode) -> None:
        """Freeze ``replica`` and drop its replication link: from now on ``primary``
        acknowledges writes that no replica will ever have (until ``thaw``)."""
        assert replica.process is not None
        replica.process.send_signal(signal.SIGSTOP)
        primary.client().client_kill_filter(_type="replica")

    def thaw(self, node: ClusterNode) -> None:
        assert node.process is not None
        node.process.send_signal(signal.SIGCONT)

    def flush(self) -> None:
        """Empty every primary (their replicas follow)."""
        for node in self.primaries():
            node.client().flushall()

    def stop(self) -> None:
        for node in self.nodes:
            if node.alive():
                assert node.process is not None
                node.process.kill()
                node.process.wait(10)
        shutil.rmtree(self.folder, ignore_errors=True)
