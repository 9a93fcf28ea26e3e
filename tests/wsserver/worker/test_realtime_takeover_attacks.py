"""A Realtime session resumed on another worker through Redis (the takeover in
session_manager loads the whole stored log to rebuild the translation from): cut
inside an answer longer than the stored log holds."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgpack
import pytest
import redis.asyncio as aioredis
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.processes import WorkerProcess
from tests.redis_server import RedisServer
from tests.wsserver.worker.damaged_store import damage_log_entry
from wsserver.frontdoor.api_keys import key_line, new_api_key
from wsserver.store.redis_layout import session_keys

REALTIME = "/v1/realtime?model=m"
USER_ITEM = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}


class Pair:
    """Two workers on one Redis store, a key for both."""

    def __init__(self, a: WorkerProcess, b: WorkerProcess, key: str, redis_url: str) -> None:
        self.a, self.b, self.key, self.redis_url = a, b, key, redis_url

    async def connect(self, worker: WorkerProcess, **headers: str) -> ClientConnection:
        return await connect(
            worker.url + REALTIME,
            additional_headers={"Authorization": f"Bearer {self.key}", **headers},
            compression=None,
        )


@pytest.fixture(scope="module")
def pair(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """Answers of 60 tokens at 60 a second; replay buffer and stored log of 32 events."""
    redis_server.flush()
    flags = ("--answer-tokens", "60", "--decode-rate", "60", "--replay-max-events", "32")
    with started_pair(redis_server, tmp_path_factory, "rt-takeover", *flags) as pair:
        yield pair


@contextmanager
def started_pair(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory, name: str, *flags: str
) -> Iterator[Pair]:
    """Two workers with ``flags`` on the Redis store; neither may log a traceback."""
    key = new_api_key()
    keys = tmp_path_factory.mktemp(name) / "keys"
    keys.write_text(key_line("alice", key) + "\n")
    common = ("--store", redis_server.url, "--api-keys-file", str(keys), "--store-flush-ms", "5")
    a = WorkerProcess(*common, *flags, name=f"{name}-a").start()
    b = WorkerProcess(*common, *flags, name=f"{name}-b").start()
    try:
        yield Pair(a, b, key, redis_server.url)
    finally:
        a.stop()
        b.stop()
        for worker in (a, b):
            assert "Traceback" not in "".join(worker.lines), "".join(worker.lines)[-5000:]


async def receive(ws: ClientConnection) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 10))
    return event


async def ask(ws: ClientConnection) -> None:
    text_only = {"type": "session.update", "session": {"output_modalities": ["text"]}}
    await ws.send(json.dumps(text_only))
    await ws.send(json.dumps({"type": "conversation.item.create", "item": USER_ITEM}))
    await ws.send(json.dumps({"type": "response.create"}))


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")


async def stored(pair: Pair, session_id: str, seq: int) -> None:
    """Wait until the old owner's batched writes hold event ``seq``."""
    log = session_keys(session_id)[1]
    store = aioredis.from_url(pair.redis_url)
    try:
        deadline = time.monotonic() + 10
        while not await store.xrange(log, min=f"{seq}-0", max="+", count=1):
            assert time.monotonic() < deadline, "the old owner never stored the event"
            await asyncio.sleep(0.02)
    finally:
        await store.aclose()


async def test_a_long_answer_cut_and_resumed_on_another_worker_is_whole_or_refused(
    pair: Pair,
) -> None:
    """The answer is longer than the stored log: the new owner's rebuild starts inside
    it, where no response is known. Either the resume is refused (as on the same
    worker: ``replay_unavailable``) or the client gets the answer whole, nothing twice."""
    ws = await pair.connect(pair.a)
    await receive(ws)
    await receive(ws)
    await ask(ws)
    uncut: list[dict[str, Any]] = []
    while not uncut or uncut[-1]["type"] != "response.done":
        uncut.append(await receive(ws))
    await ws.close()

    ws = await pair.connect(pair.a)
    created = await receive(ws)
    seen = [created, await receive(ws)]
    await ask(ws)
    while sum(e["type"] == "response.output_text.delta" for e in seen) < 50:
        seen.append(await receive(ws))
    ws.transport.abort()
    session_id = created["resume"]["session_id"]
    last = seen[-1]["event_id"]
    await stored(pair, session_id, int(last.split("_")[1]))
    resume = {
        "X-Wsserver-Session": session_id,
        "X-Wsserver-Resume-Token": created["resume"]["resume_token"],
        "X-Wsserver-Last-Event-Id": last,
    }
    moved = await pair.connect(pair.b, **resume)
    rest: list[dict[str, Any]] = []
    try:
        while not rest or rest[-1]["type"] not in ("response.done", "error"):
            rest.append(await receive(moved))
    except ConnectionClosed:
        pass
    await moved.close()
    if rest and rest[-1]["type"] == "error":
        assert rest[-1]["error"]["code"] == "replay_unavailable", rest[-1]
        return
    ids = [e["event_id"] for e in seen + rest]
    assert len(ids) == len(set(ids)), "an event was sent twice"
    assert [e["type"] for e in seen + rest].count("response.done") == 1
    assert text_of(seen + rest) == text_of(uncut)


WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}


@pytest.mark.parametrize("tools", [[5], [{}], [{"name": 1}], ["not a name!"]])
async def test_a_stored_settings_event_whose_tools_are_no_tools_resumes_without_them(
    tools: list[Any], pair: Pair
) -> None:
    """The old owner's ``session.updated`` in the stored log names tools that are no
    tools (damaged by hand): the new owner's translation leaves those out and the
    resume goes on, instead of a writer that fails after the claim (1011 every time)."""
    ws = await pair.connect(pair.a)
    created = await receive(ws)
    seen = await receive(ws)
    update = {"type": "session.update", "session": {"type": "realtime", "tools": [WEATHER]}}
    await ws.send(json.dumps(update))
    updated = await receive(ws)
    while updated["type"] != "session.updated" or not updated["session"]["tools"]:
        updated = await receive(ws)
    ws.transport.abort()
    session_id = created["resume"]["session_id"]
    seq = int(updated["event_id"].split("_")[1])
    await stored(pair, session_id, seq)
    log = session_keys(session_id)[1]
    store = aioredis.from_url(pair.redis_url)
    try:
        ((_id, fields),) = await store.xrange(log, min=f"{seq}-0", max=f"{seq}-0")
        native = msgpack.unpackb(fields[b"p"])
        assert native["type"] == "session.updated" and native["tools"] == ["get_weather"], native
    finally:
        await store.aclose()
    native["tools"] = tools
    await damage_log_entry(pair.redis_url, session_id, seq, {b"p": msgpack.packb(native)})
    resume = {
        "X-Wsserver-Session": session_id,
        "X-Wsserver-Resume-Token": created["resume"]["resume_token"],
        "X-Wsserver-Last-Event-Id": seen["event_id"],
    }
    for _ in range(2):  # and again: the first resume left nothing broken behind
        moved = await pair.connect(pair.b, **resume)
        replayed = await receive(moved)
        while replayed["type"] != "session.updated":
            assert replayed["type"] != "error", replayed
            replayed = await receive(moved)
        assert replayed["event_id"] == updated["event_id"]
        assert replayed["session"]["tools"] == []
        moved.transport.abort()  # a cut, not a close: the session stays resumable
    # The session goes on at its new owner.
    moved = await pair.connect(pair.b, **resume)
    await ask(moved)
    event = await receive(moved)
    while event["type"] != "response.done":
        assert event["type"] != "error", event
        event = await receive(moved)
    assert event["response"]["status"] == "completed"
    await moved.close()


@pytest.fixture(scope="module")
def long_session_pair(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    """Answers of 8 tokens (about 11 events each); replay buffer and stored log of 64."""
    flags = ("--answer-tokens", "8", "--decode-rate", "400", "--replay-max-events", "64")
    flags += ("--message-burst-per-principal", "5000")
    with started_pair(redis_server, tmp_path_factory, "rt-long", *flags) as pair:
        yield pair


@pytest.mark.parametrize("lost", ["the last answer", "nothing"])
async def test_a_long_session_resumes_on_another_worker(long_session_pair: Pair, lost: str) -> None:
    """Twelve answers are far more than the stored log holds: the new owner's rebuild
    starts from the quiet point the old owner acked, which the stored log keeps as its
    start (trimmed by the bounds alone, it would start inside an answer: refused)."""
    pair = long_session_pair
    ws = await pair.connect(pair.a)
    created = await receive(ws)
    await receive(ws)
    answers: list[list[dict[str, Any]]] = []
    for _ in range(12):
        await ask(ws)
        events = [await receive(ws)]
        while events[-1]["type"] != "response.done":
            events.append(await receive(ws))
        answers.append(events)
    ws.transport.abort()
    session_id = created["resume"]["session_id"]
    await stored(pair, session_id, int(answers[-1][-1]["event_id"].split("_")[1]))
    last = (answers[-2] if lost == "the last answer" else answers[-1])[-1]["event_id"]
    resume = {
        "X-Wsserver-Session": session_id,
        "X-Wsserver-Resume-Token": created["resume"]["resume_token"],
        "X-Wsserver-Last-Event-Id": last,
    }
    moved = await pair.connect(pair.b, **resume)
    ready: list[dict[str, Any]] = []  # a client that missed nothing is sent nothing first
    while lost == "the last answer" and (
        not ready or ready[-1]["type"] not in ("response.done", "error")
    ):
        ready.append(await receive(moved))
    await ask(moved)  # and the session goes on there
    after = [await receive(moved)]
    while after[-1]["type"] not in ("response.done", "error"):
        after.append(await receive(moved))
    await moved.close()
    replayed = [e for e in ready if e["type"] != "rate_limits.updated"]
    assert [e for e in replayed + after if e["type"] == "error"] == [], replayed + after
    session_ids = [e["event_id"] for e in answers[-1] if e["event_id"].count("_") == 2]
    if lost == "the last answer":
        assert [e["event_id"] for e in replayed if e["event_id"].count("_") == 2] == session_ids
    assert after[-1]["response"]["status"] == "completed"
