"""``/v1/realtime`` through ``wsserver router``: real Redis, two real workers, the router.

The unmodified openai SDK (run from its own Python, as in
``tests/wsserver/transport/test_realtime.py``) is pointed at the router's address; the
router and the workers check the same API key. A stand-in worker that answers 503
records the exact request head it was handed, to show the router forwards a Realtime
handshake (path, ``?model=``, ``Authorization`` and the resume extension's headers)
untouched and places it by ``X-Wsserver-Session``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.openai_sdk import openai_sdk_python
from tests.processes import ROOT, WorkerProcess, eventually
from tests.redis_server import RedisServer
from tests.wsserver.router.test_router import FAST, RouterProcess
from wsserver.frontdoor.api_keys import key_line, new_api_key
from wsserver.registry.base import WorkerInfo
from wsserver.registry.redis import RedisWorkerRegistry
from wsserver.router.placement import rendezvous_order
from wsserver.store.redis_layout import lease_key, session_keys

SDK_TURNS = ROOT / "tests" / "wsserver" / "transport" / "realtime_sdk_turns.py"
REALTIME = "/v1/realtime?model=gpt-realtime"
HANDSHAKES = 10


class Cluster:
    """Two workers (Redis store and registry) and the router in front of them."""

    def __init__(self, redis_url: str, keys: Path, key: str) -> None:
        self.redis_url = redis_url
        self.key = key
        self.keys = str(keys)
        auth = ("--api-keys-file", self.keys)
        # The owner and hostile tests make many refused resumes on purpose.
        guesses = ("--failed-resume-burst", "100")
        self.workers = {
            name: WorkerProcess("--store", redis_url, *FAST, *auth, *guesses, name=name)
            for name in ("rt-a", "rt-b")
        }
        for worker in self.workers.values():
            worker.start()
        self.router = RouterProcess(redis_url, *auth)

    @property
    def http(self) -> str:
        return self.router.url.replace("ws://", "http://")

    def admin_stats(self) -> dict[str, Any]:
        return self.router.stats_as(self.key)

    def stop(self) -> int | None:
        code = self.router.stop()
        for worker in self.workers.values():
            worker.stop()
        return code


@pytest.fixture(scope="module")
def cluster(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    redis_server.flush()
    key = new_api_key()
    keys = tmp_path_factory.mktemp("realtime-router") / "keys"
    keys.write_text(key_line("alice", key, admin=True) + "\n")
    cluster = Cluster(redis_server.url, keys, key)
    try:
        deadline = time.monotonic() + 15
        while cluster.admin_stats()["live_workers"] != 2:
            assert time.monotonic() < deadline, "the router never saw both workers"
            time.sleep(0.05)
        yield cluster
    finally:
        code = cluster.stop()
        lines = "".join(cluster.router.lines)
        assert code == 0 and "Traceback" not in lines, lines


def sdk(mode: str, cluster: Cluster, key: str | None = None) -> subprocess.CompletedProcess[str]:
    """One mode of the transport tests' SDK script, with ``base_url`` at the router."""
    return subprocess.run(
        [openai_sdk_python(), str(SDK_TURNS), mode, cluster.http + "/v1", key or cluster.key],
        capture_output=True,
        text=True,
        timeout=60,
    )


def summary_of(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr[-3000:]
    summary: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return summary


def sessions(cluster: Cluster) -> dict[str, int]:
    """Sessions per worker, from each worker's ``/stats`` (asked with the admin key)."""
    counts = {}
    for name, worker in cluster.workers.items():
        request = urllib.request.Request(worker.http + "/stats")
        request.add_header("Authorization", f"Bearer {cluster.key}")
        with urllib.request.urlopen(request, timeout=5) as response:
            counts[name] = int(json.load(response)["sessions"])
    return counts


def test_sdk_text_turn_through_the_router(cluster: Cluster) -> None:
    relayed = cluster.admin_stats()["connections_relayed"]
    summary = summary_of(sdk("text", cluster))
    assert summary["types"][0] == "session.created"
    assert summary["types"].count("response.done") == 1
    assert summary["status"] == "completed"
    assert summary["text"] and summary["output_text"] == [summary["text"]]
    assert summary["output_tokens"] == 20
    assert "error" not in summary["types"]
    assert cluster.admin_stats()["connections_relayed"] == relayed + 1


def test_sdk_tool_call_and_its_output_through_the_router(cluster: Cluster) -> None:
    summary = summary_of(sdk("tool", cluster))
    assert summary["call"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    calling, answer = summary["responses"]
    assert (calling["status"], calling["output_types"]) == ("completed", ["function_call"])
    assert (answer["status"], answer["output_types"]) == ("completed", ["message"])
    assert "errors" not in summary


def test_sdk_cancel_through_the_router(cluster: Cluster) -> None:
    summary = summary_of(sdk("cancel", cluster))
    assert (summary["status"], summary["reason"]) == ("cancelled", "client_cancelled")
    assert summary["types"].count("response.done") == 1
    assert summary["output_tokens"] < 20


def test_sdk_with_a_wrong_key_is_refused_by_the_router(cluster: Cluster) -> None:
    before = sessions(cluster)
    unauthorized = cluster.admin_stats()["unauthorized"]
    result = sdk("text", cluster, key=new_api_key())
    assert result.returncode != 0 and "401" in result.stderr
    assert cluster.admin_stats()["unauthorized"] == unauthorized + 1
    assert sessions(cluster) == before, "refused before any worker was contacted"


class RecordingWorker:
    """Records each request head it is handed, then answers 503 (full): the router
    must go on to the next candidate."""

    def __init__(self) -> None:
        self.heads: list[bytes] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        return f"ws://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\r\n")
        await writer.drain()
        writer.close()

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


async def test_resume_headers_reach_the_owner_untouched(cluster: Cluster) -> None:
    """The owner (by the lease of ``X-Wsserver-Session``) gets the head byte for byte,
    although rendezvous hashing ranks it last; its 503 sends the client on to a live
    worker, which knows no such session: a refusal, never a fresh session."""
    registry = RedisWorkerRegistry(cluster.redis_url, ttl=120)
    redis = aioredis.from_url(cluster.redis_url)
    recorder = RecordingWorker()
    try:
        url = await recorder.start()
        info = WorkerInfo("rt-recorder", url, 0, 0, draining=False, updated_at=time.time())
        await registry.publish(info)
        await eventually(lambda: cluster.admin_stats()["live_workers"] == 3)
        live = await registry.live()
        session_id = next(
            f"sess_owned{i}"
            for i in range(1000)
            if rendezvous_order(f"sess_owned{i}", live)[-1].worker_id == "rt-recorder"
        )
        await redis.set(lease_key(session_id), "rt-recorder", ex=60)
        headers = {
            "Authorization": f"Bearer {cluster.key}",
            "X-Wsserver-Session": session_id,
            "X-Wsserver-Resume-Token": "rtok_abc.def",
            "X-Wsserver-Last-Event-Id": "event_12_3",
        }
        # Several handshakes: a router that ignored the header would pick the owner
        # first for all of them with odds of (1/3)**HANDSHAKES.
        for _ in range(HANDSHAKES):
            async with connect(
                cluster.router.url + REALTIME, additional_headers=headers, compression=None
            ) as ws:
                refused = json.loads(await asyncio.wait_for(ws.recv(), 10))
                with pytest.raises(ConnectionClosed) as closed:
                    await asyncio.wait_for(ws.recv(), 10)
            assert refused["type"] == "error", "answered by a live worker after the 503"
            assert refused["error"]["code"] == "unknown_session"
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
        assert len(recorder.heads) == HANDSHAKES, "the owner was asked first, every time"
        for raw in recorder.heads:
            head = raw.decode("latin-1")
            assert head.startswith(f"GET {REALTIME} HTTP/1.1\r\n")
            for name, value in headers.items():
                assert f"\r\n{name}: {value}\r\n" in head, (name, head)
            assert "\r\nX-Forwarded-For: 127.0.0.1\r\n" in head
    finally:
        await registry.withdraw("rt-recorder")
        await registry.close()
        await redis.aclose()
        await recorder.stop()
    await eventually(lambda: cluster.admin_stats()["live_workers"] == 2)


async def test_realtime_handshake_lands_on_the_sessions_owner(cluster: Cluster) -> None:
    """A Realtime resume naming a session goes to that session's live owner, even where
    rendezvous hashing would pick the other worker (which would take the session over)."""
    registry = RedisWorkerRegistry(cluster.redis_url, ttl=120)
    auth = {"Authorization": f"Bearer {cluster.key}"}
    try:
        live = await registry.live()
        for _ in range(40):
            ws = await connect(
                cluster.router.url + REALTIME, additional_headers=auth, compression=None
            )
            created = json.loads(await asyncio.wait_for(ws.recv(), 10))
            resume = created["resume"]
            owner = await registry.owner_of(resume["session_id"])
            if owner != rendezvous_order(resume["session_id"], live)[0].worker_id:
                break
            await ws.close()
        else:
            raise AssertionError("every session landed on its rendezvous choice")
        ws.transport.abort()  # dropped: the session waits for its client
        headers = {
            **auth,
            "X-Wsserver-Session": resume["session_id"],
            "X-Wsserver-Resume-Token": resume["resume_token"],
            "X-Wsserver-Last-Event-Id": created["event_id"],
        }
        # One after the other: a router that ignored the header would send a resume to
        # the other worker (which takes the session over) with odds of 1/2 each time.
        for _ in range(HANDSHAKES):
            async with connect(
                cluster.router.url + REALTIME, additional_headers=headers, compression=None
            ) as moved:
                await moved.send(json.dumps({"type": "input_audio_buffer.clear"}))
                answer = json.loads(await asyncio.wait_for(moved.recv(), 10))
                assert answer["type"] == "input_audio_buffer.cleared", answer
                assert await registry.owner_of(resume["session_id"]) == owner
                moved.transport.abort()
            headers["X-Wsserver-Last-Event-Id"] = answer["event_id"]
    finally:
        await registry.close()


async def raw_realtime_upgrade(cluster: Cluster, extra: str) -> bytes:
    """A Realtime upgrade sent by hand through the router; everything it answers."""
    host, port = cluster.router.url.removeprefix("ws://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        (
            f"GET {REALTIME} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {cluster.key}\r\n{extra}\r\n"
        ).encode()
    )
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


async def test_hostile_session_headers_are_refused_or_placed_anew(cluster: Cluster) -> None:
    before = sessions(cluster)
    # Longer than any session id: 400 from the router, no worker asked, no lookup made.
    answer = await raw_realtime_upgrade(cluster, f"X-Wsserver-Session: {'s' * 300}\r\n")
    assert answer.startswith(b"HTTP/1.1 400 ") and b"session id too long" in answer
    assert sessions(cluster) == before
    # A session nobody owns (made up, or expired): placed like a new one, where the
    # worker refuses the resume in-band and closes 1008; no session is opened for it.
    headers = {
        "Authorization": f"Bearer {cluster.key}",
        "X-Wsserver-Session": "sess_nobody",
        "X-Wsserver-Resume-Token": "rtok_made.up",
    }
    async with connect(
        cluster.router.url + REALTIME, additional_headers=headers, compression=None
    ) as ws:
        refused = json.loads(await asyncio.wait_for(ws.recv(), 10))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
    assert refused["type"] == "error" and refused["error"]["code"] == "unknown_session"
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    assert sessions(cluster) == before


async def test_router_stops_cleanly_with_a_realtime_connection_open(cluster: Cluster) -> None:
    """SIGTERM cuts relayed connections (the clients resume elsewhere): without a
    traceback in the router's log for any of them (Python 3.11's stream server logs one
    for each connection task that ends cancelled)."""
    router = RouterProcess(cluster.redis_url, "--api-keys-file", cluster.keys)
    try:
        headers = {"Authorization": f"Bearer {cluster.key}"}
        async with connect(
            router.url + REALTIME, additional_headers=headers, compression=None
        ) as ws:
            created = json.loads(await asyncio.wait_for(ws.recv(), 10))
            assert created["type"] == "session.created"
            assert await asyncio.to_thread(router.stop) == 0
            with pytest.raises(ConnectionClosed):
                while True:  # conversation.created may still be on its way
                    await asyncio.wait_for(ws.recv(), 10)
    finally:
        router.stop()
    lines = "".join(router.lines)
    assert "Traceback" not in lines and "ERROR" not in lines, lines


async def _until(ws: Any, kind: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] != kind:
        events.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
    return events


def _prompt_tokens(*texts: str) -> int:
    """What the simulated engine counts for a prompt of these turns (words + 4 each)."""
    return sum(len(text.split()) + 4 for text in texts)


async def _ask(ws: Any, text: str) -> list[dict[str, Any]]:
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
    await ws.send(json.dumps({"type": "response.create"}))
    events = await _until(ws, "response.done")
    events.extend(await _until(ws, "rate_limits.updated"))
    return events


async def test_a_session_resumed_on_another_worker_keeps_its_settings(cluster: Cluster) -> None:
    pirate = "Answer like a pirate would."
    auth = {"Authorization": f"Bearer {cluster.key}"}
    first, second = cluster.workers["rt-a"], cluster.workers["rt-b"]
    ws = await connect(first.url + REALTIME, additional_headers=auth, compression=None)
    created = json.loads(await asyncio.wait_for(ws.recv(), 10))
    session = {
        "type": "realtime",
        "instructions": pirate,
        "output_modalities": ["text"],
        "audio": {"input": {"turn_detection": None}, "output": {"voice": "verse"}},
    }
    await ws.send(json.dumps({"type": "session.update", "session": session}))
    await _until(ws, "session.updated")
    events = await _ask(ws, "hi")
    said = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    ws.transport.abort()  # dropped: the session waits to be resumed
    # The new owner rebuilds from the stored log: wait until the old owner's batched
    # writes hold the last event the client saw (a worker that died before would
    # leave it unresumable, refused).
    seen_seq = int(events[-1]["event_id"].split("_")[1])
    log = session_keys(created["resume"]["session_id"])[1]
    store = aioredis.from_url(cluster.redis_url)
    try:
        deadline = time.monotonic() + 10
        while not await store.xrange(log, min=f"{seen_seq}-0", max="+", count=1):
            assert time.monotonic() < deadline, "the old owner never stored the last event"
            await asyncio.sleep(0.02)
    finally:
        await store.aclose()
    resume = {
        "X-Wsserver-Session": created["resume"]["session_id"],
        "X-Wsserver-Resume-Token": created["resume"]["resume_token"],
        "X-Wsserver-Last-Event-Id": events[-1]["event_id"],
    }
    async with connect(
        second.url + REALTIME, additional_headers={**auth, **resume}, compression=None
    ) as moved:
        await moved.send(json.dumps({"type": "session.update", "session": {"type": "realtime"}}))
        (updated,) = [e for e in await _until(moved, "session.updated")]
        shown = updated["session"]
        # What the core holds came with the session; the voice only the dialect held
        # (docs/REALTIME.md, what a resume keeps) is the default on another worker.
        assert (shown["instructions"], shown["output_modalities"]) == (pirate, ["text"])
        assert shown["audio"]["input"]["turn_detection"] is None
        assert shown["audio"]["output"]["voice"] == "alloy"
        again = await _ask(moved, "again")
    done = next(e for e in again if e["type"] == "response.done")["response"]
    assert done["status"] == "completed"
    assert done["output_modalities"] == ["text"]
    assert not [e for e in again if "audio" in e["type"]]
    assert done["usage"]["input_tokens"] == _prompt_tokens(pirate, "hi", said, "again")
