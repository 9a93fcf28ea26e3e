"""The router in front of real worker processes, on loopback, with a real Redis.

Workers started with a Redis store publish themselves; the stand-ins for broken
workers (refusing, dead) are published by the test with :class:`RedisWorkerRegistry`.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from tests.processes import WSSERVER, WorkerProcess, cli_env, eventually
from tests.redis_server import free_port
from tests.wsserver.wire import RawClient
from wsserver.registry.base import WorkerInfo
from wsserver.registry.redis import RedisWorkerRegistry
from wsserver.router.http import parse_request_head
from wsserver.router.placement import rendezvous_order
from wsserver.router.server import Router, RouterSettings

ROUTER = [*WSSERVER, "router"]
FAST = ("--decode-rate", "200", "--answer-tokens", "20", "--store-flush-ms", "5")


class RouterProcess:
    """``wsserver router`` (``run_router``) in a subprocess."""

    def __init__(self, store: str, *flags: str) -> None:
        self.process = subprocess.Popen(
            [*ROUTER, "--port", "0", "--store", store, "--refresh-interval", "0.05", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=cli_env(),
        )
        self.lines: list[str] = []
        self.url = ""
        found = threading.Event()

        def pump() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self.lines.append(line)
                match = re.search(r"router listening on (ws://\S+)", line)
                if match:
                    self.url = match.group(1)
                    found.set()

        threading.Thread(target=pump, daemon=True).start()
        if not found.wait(20):
            self.stop()
            raise RuntimeError(f"router did not start:\n{''.join(self.lines)}")

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(self.url.replace("ws://", "http://") + path) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as exc:
            return exc.code, json.load(exc)

    def stats(self) -> dict[str, Any]:
        return self.get("/stats")[1]

    def stats_as(self, key: str) -> dict[str, Any]:
        """``/stats`` of a router that wants an admin key."""
        request = urllib.request.Request(self.url.replace("ws://", "http://") + "/stats")
        request.add_header("Authorization", f"Bearer {key}")
        with urllib.request.urlopen(request) as response:
            stats: dict[str, Any] = json.load(response)
            return stats

    def stop(self) -> int | None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        return self.process.returncode


class RefusingWorker:
    """Answers every upgrade the way a draining or full worker does: 503, Retry-After."""

    def __init__(self) -> None:
        self.hits = 0
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        return f"ws://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        self.hits += 1
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\r\n")
        await writer.drain()
        writer.close()

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


@pytest.fixture
async def registry(redis_url: str) -> AsyncIterator[RedisWorkerRegistry]:
    registry = RedisWorkerRegistry(redis_url, ttl=120)
    yield registry
    await registry.close()


@pytest.fixture
def start_worker(redis_url: str) -> Iterator[Any]:
    started: list[WorkerProcess] = []

    def start(name: str, *flags: str) -> WorkerProcess:
        worker = WorkerProcess("--store", redis_url, *FAST, *flags, name=name)
        started.append(worker.start())
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def router(redis_url: str) -> Iterator[RouterProcess]:
    process = RouterProcess(redis_url)
    yield process
    assert process.stop() == 0, "".join(process.lines)
    assert "Traceback" not in "".join(process.lines), "".join(process.lines)


async def publish(registry: RedisWorkerRegistry, worker_id: str, url: str) -> WorkerInfo:
    """Register a stand-in worker, as a real worker's heartbeat would."""
    info = WorkerInfo(
        worker_id, url, capacity=0, sessions=0, draining=False, updated_at=time.time()
    )
    await registry.publish(info)
    return info


async def sees(router: RouterProcess, count: int) -> None:
    await eventually(lambda: router.stats()["live_workers"] == count)


def key_ranking_first(first: str, workers: list[WorkerInfo]) -> str:
    """A session id whose rendezvous order puts worker ``first`` ahead of the others."""
    return next(
        key
        for key in (f"sess_pick{i}" for i in range(1000))
        if rendezvous_order(key, workers)[0].worker_id == first
    )


async def raw_upgrade(url: str, extra: bytes = b"") -> bytes:
    """Send a WebSocket upgrade by hand; everything the router answers."""
    host, port = url.removeprefix("ws://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        + extra
        + b"\r\n"
    )
    answer = await reader.read()
    writer.close()
    return answer


MALFORMED_HEADS = {
    "bare LF in a value": b"X-A: a\nb\r\n",
    "bare CR in a value": b"X-A: a\rb\r\n",
    "NUL in a value": b"X-A: a\x00b\r\n",
    "space before the colon": b"X-A : a\r\n",
    "a body, chunked": b"Transfer-Encoding: chunked\r\n",
    "a body, by length": b"Content-Length: 5\r\n",
}
"""Upgrade heads a worker reads no further (it closes without an answer)."""


async def test_a_head_no_worker_would_read_is_refused_by_the_router_not_blamed_on_workers(
    router: RouterProcess, start_worker: Any
) -> None:
    worker = start_worker("w-strict")
    await sees(router, 1)
    for name, extra in MALFORMED_HEADS.items():
        # The worker itself answers nothing to it: the router would take it for a
        # failed worker and try the next (every worker, then 503 "no worker").
        assert await raw_upgrade(worker.url, extra) == b"", name
        answer = await raw_upgrade(router.url, extra)
        assert answer.startswith(b"HTTP/1.1 400 "), (name, answer[:80])
    stats = router.stats()
    assert (stats["bad_requests"], stats["worker_failures"]) == (len(MALFORMED_HEADS), 0)
    assert stats["live_workers"] == 1


async def test_http_endpoints_and_refusals(router: RouterProcess) -> None:
    assert router.get("/healthz") == (200, {"status": "ok"})
    status, ready = router.get("/readyz")
    assert (status, ready["ready"], ready["registry"]) == (503, False, True)
    assert router.get("/")[0] == 400, "a plain GET is not an upgrade"
    # No worker at all: a clean 503 the client can back off on.
    answer = await raw_upgrade(router.url)
    assert answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert b"\r\nRetry-After: 1\r\n" in answer
    answer = await raw_upgrade(router.url, b"X-Big: " + b"a" * 20_000 + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431 ")
    stats = router.stats()
    assert (stats["refused"], stats["bad_requests"], stats["live_workers"]) == (1, 2, 0)


async def test_new_sessions_spread_over_the_workers(
    router: RouterProcess, start_worker: Any
) -> None:
    workers = [start_worker(name) for name in ("a", "b", "c")]
    await sees(router, 3)
    clients = [await RawClient.connect(router.url) for _ in range(45)]
    for client in clients:
        await client.start()
    counts = [worker.stats()["sessions"] for worker in workers]
    # Random keys over 3 workers: all 45 on two of them has odds of about 3e-8.
    assert sum(counts) == 45 and min(counts) > 0, counts
    assert router.stats()["connections_relayed"] == 45
    # Frames flow both ways through the relay, unparsed.
    await clients[0].send({"type": "input.text", "text": "hi"})
    await clients[0].send({"type": "response.create"})
    assert (await clients[0].until("response.done"))["status"] == "completed"
    for client in clients:
        await client.close()
    # Nothing left behind in the router once the clients are gone.
    await eventually(lambda: router.stats()["active"] == 0)


@pytest.mark.parametrize("via", ["query", "header"])
async def test_resume_lands_on_the_owner(
    via: str, router: RouterProcess, registry: RedisWorkerRegistry, start_worker: Any
) -> None:
    workers = {name: start_worker(name) for name in ("a", "b", "c")}
    await sees(router, 3)
    infos = await registry.live()
    # A session whose owner is not its rendezvous choice: only the owner lookup finds it.
    for _ in range(40):
        client = await RawClient.connect(router.url)
        ready = await client.start()
        owner = await registry.owner_of(ready["session_id"])
        if owner != rendezvous_order(ready["session_id"], infos)[0].worker_id:
            break
        await client.close()
    else:
        raise AssertionError("every session landed on its rendezvous choice")
    client.abort()  # a dropped network: the session stays on its owner, detached
    await eventually(lambda: workers[str(owner)].stats()["attached"] == 0)
    session_id = ready["session_id"]
    if via == "query":
        again = await RawClient.connect(f"{router.url}/?session_id={session_id}")
    else:
        again = await RawClient.connect(
            router.url, additional_headers={"X-Wsserver-Session": session_id}
        )
    await again.resume(ready, last_seq=0)
    assert (await again.until("session.ready"))["session_id"] == session_id
    assert workers[str(owner)].stats()["attached"] == 1
    assert [w.stats()["store"]["takeovers"] for w in workers.values()] == [0, 0, 0]
    await again.close()


async def test_worker_answering_503_is_skipped(
    router: RouterProcess, registry: RedisWorkerRegistry, start_worker: Any
) -> None:
    real = start_worker("real")
    refusing = RefusingWorker()
    try:
        await publish(registry, "full", await refusing.start())
        await sees(router, 2)
        session_key = key_ranking_first("full", await registry.live())
        client = await RawClient.connect(f"{router.url}/?session_id={session_key}")
        await client.start()
        assert refusing.hits == 1, "the first choice was asked, and said no"
        assert real.stats()["sessions"] == 1
        stats = router.stats()
        assert (stats["worker_refusals"], stats["retries"]) == (1, 1)
        await client.close()
        # With only the refusing worker left, the client gets the router's own 503.
        real.stop()  # a clean exit withdraws it from the registry
        await sees(router, 1)
        with pytest.raises(InvalidStatus) as refused:
            await RawClient.connect(router.url)
        assert refused.value.response.status_code == 503
        assert refused.value.response.headers["Retry-After"] == "1"
    finally:
        await refusing.stop()


async def test_dead_worker_in_the_registry_is_skipped(
    router: RouterProcess, registry: RedisWorkerRegistry, start_worker: Any
) -> None:
    real = start_worker("real")
    await publish(registry, "dead", f"ws://127.0.0.1:{free_port()}")
    await sees(router, 2)
    session_key = key_ranking_first("dead", await registry.live())
    client = await RawClient.connect(f"{router.url}/?session_id={session_key}")
    await client.start()
    assert real.stats()["sessions"] == 1
    stats = router.stats()
    assert (stats["worker_failures"], stats["retries"], stats["refused"]) == (1, 1, 0)
    await client.close()


async def test_close_codes_pass_through(router: RouterProcess, start_worker: Any) -> None:
    start_worker("slow", "--handshake-timeout", "0.5")
    await sees(router, 1)
    client = await RawClient.connect(router.url)
    # Silence after the upgrade: the worker's close 4001 crosses the router untouched.
    assert await client.closed_code() == 4001
    await eventually(lambda: router.stats()["active"] == 0)


async def test_stop_cuts_relayed_connections(redis_url: str, start_worker: Any) -> None:
    start_worker("a")
    router = Router(RouterSettings(port=0, store=redis_url, refresh_interval=0.05))
    await router.start()
    await eventually(lambda: router.stats()["live_workers"] == 1)
    client = await RawClient.connect(f"ws://127.0.0.1:{router.port}")
    await client.start()
    await router.stop()
    # Cut without a close frame: to the client, a dropped connection it resumes from.
    assert await client.closed_code() is None
    assert router.stats()["active"] == 0


def test_request_head_parsing() -> None:
    head = parse_request_head(
        b"GET /v1/realtime?session_id=sess_q&x=1 HTTP/1.1\r\nHost: h\r\n"
        b"Connection: keep-alive, Upgrade\r\nUpgrade: WebSocket\r\n"
        b"X-Wsserver-Session: sess_h\r\n\r\n"
    )
    assert (head.method, head.path, head.upgrade, head.session_id) == (
        "GET",
        "/v1/realtime",
        True,
        "sess_q",
    )
    head = parse_request_head(b"GET / HTTP/1.1\r\nx-wsserver-session: sess_h\r\n\r\n")
    assert (head.upgrade, head.session_id) == (False, "sess_h")
    for bad in (b"GET /\r\n\r\n", b"GET / HTTP/1.1\r\nno colon\r\n\r\n"):
        with pytest.raises(ValueError):
            parse_request_head(bad)
    for extra in MALFORMED_HEADS.values():
        with pytest.raises(ValueError):
            parse_request_head(b"GET / HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n")
    bad_lines = (b"GET / HTTP/1.9", b"GET /\x00 HTTP/1.1", b"G\xe9T / HTTP/1.1", b"GET  / HTTP/1.1")
    for line in bad_lines:
        with pytest.raises(ValueError, match="request line"):
            parse_request_head(line + b"\r\n\r\n")
    # What a worker reads is read here too: HTTP/1.0, an empty body, tabs, Latin-1.
    head = parse_request_head(
        b"GET / HTTP/1.0\r\nContent-Length: 0\r\nX-A:\ta\tb \r\nX-B: caf\xe9\r\nX-C:\r\n\r\n"
    )
    assert head.headers == {"content-length": "0", "x-a": "a\tb", "x-b": "caf\xe9", "x-c": ""}
    many = b"".join(b"X-%d: 1\r\n" % n for n in range(128))
    assert len(parse_request_head(b"GET / HTTP/1.1\r\n" + many + b"\r\n").headers) == 128
    with pytest.raises(ValueError, match="headers"):
        parse_request_head(b"GET / HTTP/1.1\r\n" + many + b"X-128: 1\r\n\r\n")
    with pytest.raises(ValueError, match="session id too long"):
        parse_request_head(b"GET /?session_id=" + b"s" * 300 + b" HTTP/1.1\r\n\r\n")


async def test_killed_worker_drops_its_relayed_clients(
    router: RouterProcess, start_worker: Any
) -> None:
    worker = start_worker("doomed")
    await sees(router, 1)
    client = await RawClient.connect(router.url)
    await client.start()
    worker.signal(signal.SIGKILL)
    # The kernel closes the dead worker's sockets; the router passes the drop on, so the
    # client sees what it would see without a router (no close frame) and resumes.
    assert await client.closed_code() is None
    await eventually(lambda: router.stats()["active"] == 0)


async def test_resume_through_the_router_on_a_redis_cluster(redis_cluster_url: str) -> None:
    # The registry (live workers, each session's owner) read from a Redis Cluster.
    router = RouterProcess(redis_cluster_url)
    workers = {
        name: WorkerProcess("--store", redis_cluster_url, *FAST, name=name).start()
        for name in ("a", "b")
    }
    try:
        await sees(router, 2)
        client = await RawClient.connect(router.url)
        ready = await client.start()
        registry = RedisWorkerRegistry(redis_cluster_url)
        try:
            owner = await registry.owner_of(ready["session_id"])
        finally:
            await registry.close()
        assert owner in workers
        client.abort()
        await eventually(lambda: workers[str(owner)].stats()["attached"] == 0)
        again = await RawClient.connect(
            router.url, additional_headers={"X-Wsserver-Session": ready["session_id"]}
        )
        await again.resume(ready, last_seq=0)
        assert (await again.until("session.ready"))["session_id"] == ready["session_id"]
        assert workers[str(owner)].stats()["attached"] == 1
        assert [w.stats()["store"]["takeovers"] for w in workers.values()] == [0, 0]
        await again.close()
    finally:
        for worker in workers.values():
            worker.stop()
        assert router.stop() == 0, "".join(router.lines)
        assert "Traceback" not in "".join(router.lines), "".join(router.lines)
