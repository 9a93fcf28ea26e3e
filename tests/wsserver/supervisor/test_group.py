"""``wsserver serve --workers 2`` against a real Redis: two processes on one port."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.processes import WSSERVER, WorkerProcess, cli_env, eventually, run_serve
from tests.redis_server import RedisServer
from tests.wsserver.supervisor.group_processes import WorkerGroupProcess, alive
from wsserver.client.session_client import Backoff, SessionClient
from wsserver.store.base import SessionStore, StoreLimits
from wsserver.store.selector import open_store

PROMPT = "tell me about worker groups"
FAST = (
    *("--decode-rate", "200", "--answer-tokens", "200", "--store-flush-ms", "5"),
    *("--drain-timeout", "0.5", "--lease-ttl", "1", "--grace-period", "5"),
)
EXPLICIT = {
    ("incomplete", "worker_draining"),
    ("failed", "session_moved"),
    ("failed", "worker_lost"),
    ("truncated", "worker_lost"),
}


@pytest.fixture(scope="module")
def group(redis_server: RedisServer) -> Iterator[WorkerGroupProcess]:
    process = WorkerGroupProcess("--store", redis_server.url, *FAST).start()
    yield process
    process.stop()


@pytest.fixture
async def store(redis_server: RedisServer) -> AsyncIterator[SessionStore]:
    opened = open_store(redis_server.url, StoreLimits())
    yield opened
    await opened.close()


@pytest.fixture(scope="module")
def expected(group: WorkerGroupProcess) -> str:
    async def ask() -> str:
        async with SessionClient(group.url) as client:
            return (await client.ask(PROMPT)).text

    return asyncio.run(ask())


async def _collect_until_done(client: SessionClient, drop_at: int = 0) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    deltas = 0
    while True:
        event = await client.next_event(20)
        events.append(event)
        if event["type"] == "response.text.delta":
            deltas += 1
            if deltas == drop_at:
                client.drop_connection()
        if event["type"] == "response.done":
            return events


def _text(events: list[dict[str, Any]], response_id: str) -> str:
    return "".join(
        e["delta"]
        for e in events
        if e["type"] == "response.text.delta" and e["response_id"] == response_id
    )


def _assert_gap_free(events: list[dict[str, Any]]) -> None:
    seqs = [e["seq"] for e in events if "seq" in e]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "a seq was doubled or skipped"


async def _whole_answer(client: SessionClient, events: list[dict[str, Any]]) -> str:
    """The answer's text; a response lost in a move is continued from what was stored."""
    done = events[-1]
    if done["status"] == "completed":
        return _text(events, done["response_id"])
    assert (done["status"], done["reason"]) in EXPLICIT
    prefix = _text(events, done["response_id"])[: done["persisted_chars"]]
    await client.continue_response(done["response_id"])
    more = await _collect_until_done(client)
    events += more
    assert more[-1]["status"] == "completed"
    return prefix + _text(more, more[-1]["response_id"])


async def test_both_processes_take_sessions(group: WorkerGroupProcess) -> None:
    assert set(group.ready_workers()) == {"grp-0", "grp-1"}
    clients: list[SessionClient] = []
    try:
        # The kernel spreads connections: open sessions until both workers hold one
        # (40 in a row on one of two would be a 1 in 10^11 chance).
        for _ in range(40):
            clients.append(SessionClient(group.url))
            await clients[-1].open()
            counts = [group.worker_stats(slot)["sessions"] for slot in (0, 1)]
            if all(counts):
                break
        assert all(counts), f"sessions per worker: {counts}"
        assert [group.worker_stats(slot)["worker_id"] for slot in (0, 1)] == ["grp-0", "grp-1"]
    finally:
        for client in clients:
            await client.close()


async def _drop_mid_answer(url: str, store: SessionStore, expected: str) -> bool:
    """One session dropped at its 30th delta: whether it came back to the same worker."""
    client = SessionClient(url, backoff=Backoff(base=0.05))
    await client.open()
    session_id = client.session_id
    assert session_id is not None
    record = await store.get(session_id)
    assert record is not None
    before = record.owner
    await client.create_response(PROMPT)
    events = await _collect_until_done(client, drop_at=30)
    deltas = sum(e["type"] == "response.text.delta" for e in events)
    # Dropped at its 30th delta. A completed answer went on after the resume; one that
    # moved to the other worker may end right there (failed, session_moved: the new owner
    # has what the old one stored) and is continued below.
    assert deltas > 30 or events[-1]["status"] != "completed", deltas
    assert await _whole_answer(client, events) == expected
    _assert_gap_free(events)
    record = await store.get(session_id)
    assert record is not None
    await client.close()
    return record.owner == before


async def test_a_dropped_session_resumes_on_either_worker(
    group: WorkerGroupProcess, store: SessionStore, expected: str
) -> None:
    landed: set[bool] = set()
    # Where a reconnect lands is the kernel's choice: drop sessions until one came back
    # to its own worker and one to the other (each batch misses both 1 time in 8).
    for _ in range(12):
        batch = [_drop_mid_answer(group.url, store, expected) for _ in range(4)]
        landed.update(await asyncio.gather(*batch))
        if landed == {True, False}:
            break
    assert landed == {True, False}, f"resumed on the same worker: {landed}"


class Talker:
    """One session asking again and again; every answer whole or explicitly ended."""

    def __init__(self, *urls: str) -> None:
        self.client = SessionClient(
            list(urls), backoff=Backoff(base=0.05, cap=0.5, max_attempts=40)
        )
        self.outcomes: list[tuple[str, str | None, str]] = []

    async def run(self, stop: asyncio.Event) -> None:
        await self.client.open()
        while not stop.is_set():
            result = await self.client.ask(PROMPT)
            self.outcomes.append((result.status, result.reason, result.text))
        await self.client.close()


async def _talk_through(url: str, expected: str, during: Any, sessions: int = 6) -> list[Talker]:
    talkers = [Talker(url) for _ in range(sessions)]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(t.run(stop)) for t in talkers]
    await eventually(lambda: all(t.outcomes for t in talkers), timeout=30)
    await during()
    marks = [len(t.outcomes) for t in talkers]
    await eventually(
        lambda: all(len(t.outcomes) > m for t, m in zip(talkers, marks, strict=True)), timeout=30
    )
    stop.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert not [r for r in results if isinstance(r, BaseException)], results
    for talker in talkers:
        assert talker.client.sequence_gaps == 0
        for status, reason, text in talker.outcomes:
            if status == "completed":
                assert text == expected
            else:
                assert (status, reason) in EXPLICIT, f"{status}/{reason}"
    return talkers


async def test_a_rolling_restart_keeps_the_sessions(
    group: WorkerGroupProcess, expected: str
) -> None:
    old = group.ready_workers()

    async def roll() -> None:
        group.signal(signal.SIGHUP)
        await eventually(lambda: any("rolling restart done" in line for line in group.lines))

    talkers = await _talk_through(group.url, expected, roll)
    new = set(group.ready_workers()) - set(old)
    assert len(new) == 2, f"restarted workers: {new}"
    ids = {group.worker_stats(slot)["worker_id"] for slot in (0, 1)}
    assert ids == new
    # The old workers drained: closed with 1012, not cut.
    codes = [code for t in talkers for code in t.client.close_codes]
    assert 1006 not in codes, codes
    assert group.process is not None and group.process.poll() is None


async def test_a_killed_worker_is_restarted_and_its_sessions_resume(
    group: WorkerGroupProcess, expected: str
) -> None:
    started = set(group.ready_workers())
    killed: dict[str, Any] = {}

    async def kill() -> None:
        # The kernel spreads the talkers; all six on one worker is a 1 in 32 chance, so
        # the victim is whichever worker holds sessions (the first one, when both do).
        def holding() -> int | None:
            counts = [group.worker_stats(slot)["sessions"] for slot in (0, 1)]
            return next((slot for slot, count in enumerate(counts) if count > 0), None)

        await eventually(lambda: holding() is not None)
        slot = holding()
        assert slot is not None
        victim = group.worker_stats(slot)["worker_id"]
        killed.update(slot=slot, victim=victim)
        os.kill(group.ready_workers()[victim], signal.SIGKILL)

    await _talk_through(group.url, expected, kill)
    await eventually(lambda: len(set(group.ready_workers()) - started) == 1)
    assert any(f"worker {killed['victim']} exited with status 137" in line for line in group.lines)
    replacement = group.worker_stats(killed["slot"])
    assert replacement["worker_id"] != killed["victim"]
    async with SessionClient(group.url) as client:
        assert (await client.ask(PROMPT)).text == expected


async def test_sigterm_drains_the_group_into_another_worker(
    redis_server: RedisServer, expected: str
) -> None:
    other = WorkerProcess("--store", redis_server.url, *FAST, name="single").start()
    doomed = WorkerGroupProcess("--store", redis_server.url, *FAST, name="doomed").start()
    try:
        talkers = [Talker(doomed.url, other.url) for _ in range(4)]
        stop = asyncio.Event()
        tasks = [asyncio.create_task(t.run(stop)) for t in talkers]
        await eventually(lambda: all(t.outcomes for t in talkers), timeout=30)
        pids = doomed.ready_workers().values()
        doomed.signal(signal.SIGTERM)
        assert doomed.process is not None
        assert await asyncio.to_thread(doomed.process.wait, 20) == 0
        for pid in pids:  # every worker of the group is gone with it
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        marks = [len(t.outcomes) for t in talkers]
        await eventually(
            lambda: all(len(t.outcomes) > m for t, m in zip(talkers, marks, strict=True)),
            timeout=30,
        )
        stop.set()
        await asyncio.gather(*tasks)
        for talker in talkers:
            assert 1012 in talker.client.close_codes, talker.client.close_codes
            assert talker.client.url == other.url
            assert talker.client.sequence_gaps == 0
            for status, reason, text in talker.outcomes:
                assert status != "completed" or text == expected
                assert status == "completed" or (status, reason) in EXPLICIT
    finally:
        doomed.stop()
        other.stop()


def test_the_memory_store_refuses_two_workers() -> None:
    result = subprocess.run(
        [*WSSERVER, "serve", "--port", "0", "--workers", "2"],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=30,
    )
    assert result.returncode == 2
    assert "--workers 2 needs a store the processes share" in result.stderr
    assert "--store redis://" in result.stderr


def _ready_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url + "/readyz", timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


async def test_a_draining_worker_leaves_the_port_and_a_killed_parent_its_workers(
    redis_server: RedisServer,
) -> None:
    slow = ("--decode-rate", "20", "--answer-tokens", "200", "--drain-timeout", "5")
    group = WorkerGroupProcess("--store", redis_server.url, *FAST, *slow, name="slow").start()
    clients: list[SessionClient] = []
    try:
        # A response running on worker 0 keeps it draining for seconds.
        while group.worker_stats(0)["engine"]["running"] == 0:
            assert len(clients) < 40, "no session landed on worker 0"
            clients.append(SessionClient(group.url, backoff=Backoff(max_attempts=1)))
            await clients[-1].open()
            await clients[-1].create_response(PROMPT)
            await clients[-1].next_event(10)
        os.kill(group.ready_workers()["slow-0"], signal.SIGTERM)
        await eventually(lambda: _ready_status(f"http://127.0.0.1:{group.admin_port}") == 503)
        # While it drains, every new connection reaches the other worker, not a 503.
        statuses = [await asyncio.to_thread(_ready_status, group.http) for _ in range(20)]
        assert statuses == [200] * 20
        assert _ready_status(f"http://127.0.0.1:{group.admin_port}") == 503, "drain ended early"

        # The parent killed outright: its workers see their stdin end and drain.
        pids = list(group.ready_workers().values())
        assert group.process is not None
        group.process.kill()
        await eventually(lambda: not any(alive(pid) for pid in pids), timeout=20)
    finally:
        for client in clients:
            client.reconnect = False
            await client.close()
        group.stop()


def test_workers_that_cannot_start_end_the_group_with_their_status(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.pem")
    group = ("--workers", "2", "--store", "redis://127.0.0.1:1/0")
    result = run_serve(
        "--port", "0", *group, "--tls-cert", missing, "--tls-key", missing, timeout=60
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "cannot load the TLS certificate" in result.stderr
    assert "a worker failed to start; stopping the group" in result.stderr
    assert "listening on" not in result.stdout
