"""Several worker processes sharing one real Redis: resume anywhere, fencing, failures."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from protocol.conversation import Turn
from protocol.snapshot import ConversationSnapshot
from tests.processes import WSSERVER, WorkerProcess, cli_env, eventually
from tests.redis_server import RedisServer
from tests.stored_sessions import stored_snapshot_when
from tests.wsserver.tool_specs import WEATHER_TOOL
from tests.wsserver.wire import RawClient
from wsserver.client.session_client import Backoff, SessionClient, SessionClosed
from wsserver.store.base import StoreLimits
from wsserver.store.selector import open_store

PROMPT = "tell me about failover"
# No test here sends SIGTERM: a short drain keeps teardown from waiting out the default
# 25 s (and being killed at 10 s) for a response that waits on a tool result.
FAST = (
    *("--decode-rate", "200", "--answer-tokens", "300", "--store-flush-ms", "5"),
    *("--drain-timeout", "0.5"),
)


@pytest.fixture
def start_worker(redis_url: str) -> Iterator[Any]:
    started: list[WorkerProcess] = []

    def start(name: str, *flags: str, store: str | None = None) -> WorkerProcess:
        worker = WorkerProcess("--store", store or redis_url, *FAST, *flags, name=name)
        started.append(worker.start())
        return worker

    yield start
    for worker in started:
        worker.stop()


async def _reference(url: str) -> str:
    async with SessionClient(url) as client:
        return (await client.ask(PROMPT)).text


async def _collect_until_done(client: SessionClient, on_delta: Any = None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while True:
        event = await client.next_event(20)
        events.append(event)
        if event["type"] == "response.text.delta" and on_delta is not None:
            on_delta(events)
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
    assert seqs == sorted(set(seqs)), "a seq was doubled or reordered"
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "a seq is missing"


async def _finish_lost_response(
    client: SessionClient, events: list[dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]]:
    """After a lost response's done: trim to what the store had, continue, return full text."""
    done = events[-1]
    prefix = _text(events, done["response_id"])[: done["persisted_chars"]]
    await client.continue_response(done["response_id"])
    more = await _collect_until_done(client)
    created = next(e for e in more if e["type"] == "response.created")
    assert created["continues"] == done["response_id"]
    final = more[-1]
    assert final["status"] == "completed"
    return prefix + _text(more, final["response_id"]), more


@pytest.mark.parametrize("redis", ["redis", "cluster"])
async def test_cut_connection_resumes_on_another_worker(
    redis: str, start_worker: Any, request: pytest.FixtureRequest
) -> None:
    # On a Redis Cluster too: the session's keys live on one primary, the registry's on one.
    store = request.getfixturevalue("redis_cluster_url") if redis == "cluster" else None
    a, b = start_worker("a", store=store), start_worker("b", store=store)
    expected = await _reference(b.url)
    client = SessionClient([a.url, b.url], backoff=Backoff(base=0.05))
    await client.open()
    await client.create_response(PROMPT)

    def cut(events: list[dict[str, Any]]) -> None:
        if sum(e["type"] == "response.text.delta" for e in events) == 30:
            client.drop_connection()

    events = await _collect_until_done(client, cut)
    assert client.url == b.url, "the client came back on the other worker"
    assert b.stats()["store"]["takeovers"] == 1
    done = events[-1]
    if done["status"] == "completed":
        # The answer finished on A (within its grace period) and was replayed from Redis.
        text = _text(events, done["response_id"])
    else:
        assert (done["status"], done["reason"]) == ("failed", "session_moved")
        text, more = await _finish_lost_response(client, events)
        events += more
    assert text == expected
    _assert_gap_free([e for e in events if "seq" in e])
    # The old owner was fenced off: it stopped generating.
    await eventually(lambda: a.stats()["engine"]["running"] == 0)
    await client.close()


async def test_an_answer_that_ends_while_its_client_is_away_resumes_whole_elsewhere(
    start_worker: Any, redis_url: str
) -> None:
    # The answer's last deltas and its response.done are made after the drop, on A:
    # they must reach the shared log, or a resume on B gets the text but no done.
    a, b = start_worker("a"), start_worker("b")
    expected = await _reference(b.url)
    client = await RawClient.connect(a.url)
    ready = await client.start()
    await client.send({"type": "response.create", "input": PROMPT})
    seen = [await client.until("response.text.delta") for _ in range(3)]
    client.abort()
    store = open_store(redis_url, StoreLimits())
    try:
        # Until A's snapshot says the answer is over (A is alive: no takeover yet).
        for _ in range(500):
            record = await store.get(ready["session_id"])
            if record is not None and record.stream.get("active") is None:
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the answer never ended on A")
    finally:
        await store.close()
    again = await RawClient.connect(b.url)
    await again.resume(ready, seen[-1]["seq"])
    assert (await again.until("session.ready"))["resumed"] is True
    done = await again.until("response.done")
    assert done["status"] == "completed", done
    events = [*seen, *(m for m in again.seen if "seq" in m)]
    _assert_gap_free(events)
    assert _text(events, done["response_id"]) == expected
    assert b.stats()["store"]["takeovers"] == 1
    await again.close()
    # Its usage is in the ledger once: recorded by A, which made it, not by B.
    store = open_store(redis_url, StoreLimits())
    try:
        for _ in range(100):  # written in A's batches
            ledger = await store.usage(ready["session_id"])
            if ledger:
                break
            await asyncio.sleep(0.02)
        assert [(u.response_id, u.status) for u in ledger] == [(done["response_id"], "completed")]
        assert ledger[0].usage.to_dict() == done["usage"]
    finally:
        await store.close()


async def test_a_resume_that_replaces_a_stalled_connection_misses_nothing(
    start_worker: Any,
) -> None:
    # The old connection stops reading (a half-open phone): events wait in the outbox.
    # Replacing it detaches the session, which numbers them for the shared log; the
    # new connection must get them too, up to the done.
    flags = ("--answer-tokens", "1500", "--decode-rate", "1000")
    a = start_worker("a", *flags, "--socket-send-buffer", "4096", "--write-limit", "1024")
    expected = await _reference(a.url)
    old = await RawClient.connect(a.url, rcvbuf=2048)
    ready = await old.start()
    await old.send({"type": "response.create", "input": PROMPT})
    seen = [await old.until("response.text.delta") for _ in range(5)]
    await asyncio.sleep(1.0)  # the writer stalls; the answer goes on into the outbox
    again = await RawClient.connect(a.url)
    await again.resume(ready, seen[-1]["seq"])
    assert (await again.until("session.ready"))["resumed"] is True
    done = await again.until("response.done", timeout=30)
    assert done["status"] == "completed", done
    # The old connection read up to seen[-1]; the new one the rest.
    events = [m for m in (*old.seen, *again.seen) if "seq" in m]
    _assert_gap_free(events)
    assert _text(events, done["response_id"]) == expected
    old.abort()
    await again.close()


async def test_a_session_ended_on_its_new_owner_stays_ended(
    start_worker: Any, redis_url: str
) -> None:
    # A, fenced off by the takeover, hears of it at its next renewal, after B removed
    # the session: that must stop A, not make it write the session back as its own.
    a, b = start_worker("a"), start_worker("b")
    client = await RawClient.connect(a.url)
    ready = await client.start()
    await client.send({"type": "response.create", "input": PROMPT, "max_output_tokens": 10})
    done = await client.until("response.done")
    client.abort()
    again = await RawClient.connect(b.url)
    await again.resume(ready, done["seq"])
    await again.until("session.ready")
    await again.close()  # 1000: the session ends, and B removes it from the store
    # A renews every lease-ttl / 3 (10 s / 3).
    await eventually(lambda: a.stats()["sessions"] == 0, timeout=15)
    store = open_store(redis_url, StoreLimits())
    try:
        # A holds nothing now, so it writes nothing more; B's removal may land a little
        # after the close. A record A wrote back after that removal would stay.
        deadline = asyncio.get_running_loop().time() + 10
        while await store.get(ready["session_id"]) is not None:
            assert asyncio.get_running_loop().time() < deadline, "the session was written back"
            await asyncio.sleep(0.05)
        ledger = await store.usage(ready["session_id"])
        assert [u.response_id for u in ledger] == [done["response_id"]]
    finally:
        await store.close()


async def test_a_response_ended_before_any_write_of_it_keeps_its_usage_after_a_takeover(
    start_worker: Any, redis_url: str
) -> None:
    # A writes once a second: the response ends, the client resumes on B and closes
    # before any of it is stored. B's claim saw nothing running, so A's late entry,
    # fenced off, is the response's only record: the ledger keeps it (once).
    a = start_worker("a", "--store-flush-ms", "1000", "--lease-ttl", "60")
    b = start_worker("b")
    client = await RawClient.connect(a.url)
    ready = await client.start()
    await client.send({"type": "response.create", "input": PROMPT, "max_output_tokens": 10})
    done = await client.until("response.done")
    client.abort()
    again = await RawClient.connect(b.url)
    await again.resume(ready, done["seq"])
    await again.until("session.ready")
    await again.close()
    # A's write is refused as stale (not renewed: its first renewal is 20 s away).
    await eventually(lambda: a.stats()["sessions"] == 0, timeout=15)
    store = open_store(redis_url, StoreLimits())
    try:
        ledger = await store.usage(ready["session_id"])
        assert [u.response_id for u in ledger] == [done["response_id"]]
        assert ledger[0].status == done["status"] and ledger[0].usage.output_tokens_generated > 0
    finally:
        await store.close()


async def test_kill_9_of_the_owner_mid_response(start_worker: Any, redis_url: str) -> None:
    a, b = start_worker("a", "--lease-ttl", "1"), start_worker("b", "--lease-ttl", "1")
    expected = await _reference(b.url)
    client = SessionClient([a.url, b.url], backoff=Backoff(base=0.2, cap=0.5))
    await client.open()
    session_id = client.session_id
    assert session_id is not None
    await client.create_response(PROMPT)
    events: list[dict[str, Any]] = []
    while sum(e["type"] == "response.text.delta" for e in events) < 40:
        events.append(await client.next_event(20))
    a.signal(signal.SIGKILL)
    events += await _collect_until_done(client)
    done = events[-1]
    assert done["status"] == "failed"
    assert done["reason"] in ("worker_lost", "session_moved")
    assert done["usage"]["output_tokens_generated"] >= done["usage"]["output_tokens_delivered"]
    assert done["persisted_chars"] > 0
    text, more = await _finish_lost_response(client, events)
    assert text == expected
    # Every event reached the application once, in order, across the failover.
    _assert_gap_free(events + more)
    await client.close()

    result = await asyncio.to_thread(
        subprocess.run,
        [*WSSERVER, "usage", session_id, "--store", redis_url],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[3:]}
    assert rows["resp_1"][1] == "failed"
    assert int(rows["resp_1"][4]) >= int(rows["resp_1"][5]), "generated >= delivered"
    assert rows["resp_2"][1] == "completed"


async def test_stale_owner_is_fenced_and_stops_generating(start_worker: Any) -> None:
    flags = ("--heartbeat-interval", "0.2", "--answer-tokens", "100000")
    a, b = start_worker("a", *flags), start_worker("b", *flags)
    client = SessionClient([a.url, b.url], backoff=Backoff(base=0.05))
    await client.open()
    await client.create_response(PROMPT)
    while (await client.next_event(20))["type"] != "response.text.delta":
        pass
    a.signal(signal.SIGSTOP)
    # The client's heartbeat watchdog notices the silence and resumes on B.
    events = await _collect_until_done(client)
    assert (events[-1]["status"], events[-1]["reason"]) == ("failed", "session_moved")
    generated_on_b = b.stats()["engine"]["tokens_generated"]
    assert generated_on_b == 0, "B did not restart the generation"
    a.signal(signal.SIGCONT)
    # A's next write is rejected for its stale epoch: it aborts and drops the session.
    await eventually(lambda: a.stats()["engine"]["running"] == 0)
    await eventually(lambda: a.stats()["sessions"] == 0)
    stopped_at = a.stats()["engine"]["tokens_generated"]
    await asyncio.sleep(0.3)
    assert a.stats()["engine"]["tokens_generated"] == stopped_at
    await client.close()


async def test_redis_down_and_back(start_worker: Any) -> None:
    redis = RedisServer()
    redis.start()
    try:
        a = start_worker("a", "--answer-tokens", "300", "--decode-rate", "60", store=redis.url)
        client = SessionClient(a.url)
        await client.open()
        await client.create_response(PROMPT)
        await client.next_event(10)
        assert a.get("/readyz")[0] == 200
        redis.kill()
        await eventually(lambda: a.get("/readyz")[0] == 503)
        # New sessions get an explicit error while the store is down.
        with pytest.raises(SessionClosed):
            async with SessionClient(a.url, open_timeout=2, backoff=Backoff(max_attempts=1)):
                pass
        redis.start()
        await eventually(lambda: a.get("/readyz")[0] == 200)
        # The live session streamed on from memory the whole time.
        events = await _collect_until_done(client)
        assert events[-1]["status"] == "completed"
        assert events[-1]["usage"]["output_tokens_delivered"] == 300
        await eventually(lambda: a.stats()["store"]["up"])
        async with SessionClient(a.url) as fresh:
            assert (await fresh.ask("after recovery")).status == "completed"
        await client.close()
    finally:
        redis.kill()


async def test_trimmed_history_fails_with_a_snapshot(start_worker: Any, redis_url: str) -> None:
    # The snapshot comes from the store, as of the owner's last batch: a resume elsewhere
    # right after an answer can see the one before it. A slow flush widens that window
    # (a loaded machine opens it by chance), so the test waits for the batch first.
    flags = ("--replay-max-events", "16", "--answer-tokens", "80", "--store-flush-ms", "200")
    a, b = start_worker("a", *flags), start_worker("b", *flags)
    client = SessionClient(a.url)
    await client.open()
    first = await client.ask(PROMPT)
    session_id, token = client.session_id, client.state.resume_token
    assert session_id is not None
    await stored_snapshot_when(
        redis_url, session_id, lambda snap: (snap.last_response or {}).get("status") == "completed"
    )
    raw = await RawClient.connect(b.url)
    await raw.send(
        {"type": "session.resume", "session_id": session_id, "resume_token": token, "last_seq": 2}
    )
    error = await raw.recv()
    assert (error["type"], error["code"]) == ("error", "replay_unavailable")
    snapshot = error["snapshot"]
    assert snapshot["conversation"][0] == {"role": "user", "text": PROMPT}
    assert snapshot["last_response"]["text"] == first.text
    assert snapshot["last_response"]["status"] == "completed"
    await raw.close()
    await client.close()


async def test_expired_history_fails_with_a_snapshot(start_worker: Any) -> None:
    flags = ("--resume-window", "0.5", "--answer-tokens", "20")
    a, b = start_worker("a", *flags), start_worker("b", *flags)
    client = SessionClient(a.url)
    await client.open()
    await client.ask(PROMPT)
    session_id, token = client.session_id, client.state.resume_token
    client.reconnect = False
    client.drop_connection()
    await asyncio.sleep(1.5)
    raw = await RawClient.connect(b.url)
    await raw.send(
        {"type": "session.resume", "session_id": session_id, "resume_token": token, "last_seq": 1}
    )
    error = await raw.recv()
    assert error["code"] == "replay_unavailable"
    assert error["snapshot"]["conversation"][0]["text"] == PROMPT
    await raw.close()
    await client.close()


async def test_wrong_token_leaks_nothing(start_worker: Any) -> None:
    a, b = start_worker("a"), start_worker("b")
    owner = await RawClient.connect(a.url)
    session_id = (await owner.start())["session_id"]
    raw = await RawClient.connect(b.url)
    await raw.send(
        {"type": "session.resume", "session_id": session_id, "resume_token": "x", "last_seq": 0}
    )
    error = await raw.recv()
    assert set(error) == {"type", "code", "message"}
    assert error["code"] == "invalid_resume_token"
    await raw.close()
    # The refused resume did not take the session away from its owner.
    await owner.send({"type": "response.create", "input": "still mine?"})
    assert (await owner.until("response.done"))["status"] == "completed"
    await owner.close()


async def test_refused_resume_elsewhere_does_not_steal_a_live_session(start_worker: Any) -> None:
    flags = ("--replay-max-events", "16", "--answer-tokens", "80")
    a, b = start_worker("a", *flags), start_worker("b", *flags)
    owner = await RawClient.connect(a.url)
    ready = await owner.start()
    await owner.send({"type": "response.create", "input": PROMPT})
    await owner.until("response.done")
    stale = await RawClient.connect(b.url)
    for last_seq, code in ((1, "replay_unavailable"), (10_000, "invalid_seq")):
        await stale.resume(ready, last_seq)
        assert (await stale.recv())["code"] == code
    await stale.close()
    assert b.stats()["store"]["takeovers"] == 0
    # The owner's connection was never closed and its session still answers.
    await owner.send({"type": "response.create", "input": "still here"})
    assert (await owner.until("response.done"))["status"] == "completed"
    await owner.close()


async def test_voice_session_moves_with_its_audio(start_worker: Any) -> None:
    a, b = start_worker("a"), start_worker("b")
    audio = {"sample_rate": 16000, "turn_detection": {"type": "manual"}}
    client = SessionClient([a.url, b.url], backoff=Backoff(base=0.05), audio=audio)
    await client.open()
    await client.create_response(PROMPT, max_output_tokens=60)
    events: list[dict[str, Any]] = []
    while not any(e["type"] == "response.done" for e in events):
        events.append(await client.next_event(20))
        if sum(e["type"] == "response.audio.delta" for e in events) == 10 and client.url == a.url:
            client.drop_connection()
    assert client.url == b.url
    _assert_gap_free(events)
    done = events[-1]
    sent = b"".join(e["audio"] for e in events if e["type"] == "response.audio.delta")
    if done["status"] == "completed":
        # Finished on A and replayed from Redis: every word's audio, none twice.
        assert len(sent) == 60 * 10 * 32  # 60 tokens of 10 ms (100 tok/s) at 32 bytes/ms
    else:
        assert (done["status"], done["reason"]) == ("failed", "session_moved")
    # The new owner kept the session's voice: a spoken turn works there.
    assert client.ready["audio"]["turn_detection"]["type"] == "manual"
    await client.send_audio(bytes(3200), last=True)
    committed = None
    while committed is None:
        event = await client.next_event(20)
        if event["type"] == "input_audio.committed":
            committed = event
    assert committed["duration_ms"] >= 100
    await client.close()


async def _stored_turns(redis_url: str, session_id: str) -> list[Turn]:
    """The conversation as the shared store holds it (what any next owner starts from)."""
    store = open_store(redis_url, StoreLimits())
    try:
        record = await store.get(session_id)
    finally:
        await store.close()
    assert record is not None
    return [Turn.from_wire(t) for t in ConversationSnapshot.from_dict(record.conversation).turns]


async def _stored_turns_when(
    redis_url: str, session_id: str, condition: Any, timeout: float = 15.0
) -> list[Turn]:
    """The stored conversation once ``condition(turns)`` holds (bounded wait)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        turns = await _stored_turns(redis_url, session_id)
        if condition(turns):
            return turns
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"stored conversation never matched: {turns}")
        await asyncio.sleep(0.05)


async def _read_until(client: RawClient, condition: Any, timeout: float = 20.0) -> None:
    """Read until ``condition(client.seen)`` holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition(client.seen):
        await client.recv(max(0.01, deadline - asyncio.get_running_loop().time()))


async def _in_the_ledger(redis_url: str, session_id: str, call_id: str) -> None:
    """Wait (bounded) until the store's tool-call ledger has ``call_id``: it is written
    just after the call is queued for the client, so a client can read it first."""
    store = open_store(redis_url, StoreLimits())
    try:
        deadline = asyncio.get_running_loop().time() + 15
        while call_id not in [c.call_id for c in await store.tool_calls(session_id)]:
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{call_id} never reached the ledger")
            await asyncio.sleep(0.02)
    finally:
        await store.close()


async def _pending_call_moved(
    start_worker: Any, redis_url: str, *a_flags: str
) -> tuple[RawClient, RawClient, dict[str, Any], dict[str, Any]]:
    """A call emitted on A (started with ``a_flags``); the client cut off from A
    resumes on B (a takeover).

    Returns (the client's first connection, its connection to B, the first
    ``session.ready``, the call event).
    """
    a, b = start_worker("a", *a_flags), start_worker("b")
    first = await RawClient.connect(a.url)
    ready = await first.start(tools=[WEATHER_TOOL])
    await first.send({"type": "response.create", "input": "what is the weather in Paris?"})
    call = await first.until("response.tool_call")
    assert call["arguments"] == {"city": "Paris"}
    await _in_the_ledger(redis_url, ready["session_id"], call["call_id"])
    first.abort()
    second = await RawClient.connect(b.url)
    await second.resume(ready, call["seq"])
    resumed = await second.until("session.ready")
    assert resumed["resumed"] is True
    assert b.stats()["store"]["takeovers"] == 1
    # B knows the call from the store's ledger, though it never ran the response.
    assert resumed["pending_tool_calls"] == [
        {
            "response_id": call["response_id"],
            "call_id": call["call_id"],
            "name": "get_weather",
            "arguments": {"city": "Paris"},
        }
    ]
    return first, second, ready, call


async def test_pending_tool_call_moves_to_another_worker(start_worker: Any, redis_url: str) -> None:
    """A call emitted on A, the client cut off and resumed on B: B lists the call as
    pending (from the store's ledger), applies its result once, and the conversation
    keeps it; the response lost with A ends failed, and the session goes on on B."""
    first, second, ready, call = await _pending_call_moved(start_worker, redis_url)
    output = {"temp_c": 19, "sky": "overcast"}
    tool_result = {"type": "tool.result", "call_id": call["call_id"], "output": output}
    await second.send(tool_result)
    response_id = call["response_id"]

    def lost_done(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [m for m in seen if m["type"] == "response.done" and m["response_id"] == response_id]

    def accepted(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [m for m in seen if m["type"] == "tool.result.accepted"]

    await _read_until(second, lambda seen: lost_done(seen) and accepted(seen))
    assert [(m["call_id"], m["duplicate"]) for m in accepted(second.seen)] == [
        (call["call_id"], False)
    ]
    done = lost_done(first.seen + second.seen)
    assert len(done) == 1, "one response.done for the lost response"
    assert done[0]["status"] == "failed"
    assert done[0]["reason"] in ("session_moved", "worker_lost")
    # Re-sent (as a client unsure it arrived would): acknowledged, not applied again.
    await second.send(tool_result)
    await _read_until(second, lambda seen: len(accepted(seen)) == 2)
    assert accepted(second.seen)[1]["duplicate"] is True
    _assert_gap_free([m for m in first.seen + second.seen if "seq" in m])
    # The shared store's conversation has the result, once, after the call.
    turns = await _stored_turns_when(
        redis_url, ready["session_id"], lambda ts: any(t.role == "tool" for t in ts)
    )
    results = [t for t in turns if t.role == "tool"]
    assert [(t.tool_call_id, json.loads(t.text)) for t in results] == [(call["call_id"], output)]
    index = turns.index(results[0])
    assert call["call_id"] in [c.call_id for c in turns[index - 1].tool_calls]
    # B serves the session from here on.
    await second.send(
        {"type": "response.create", "input": "and tomorrow?", "max_output_tokens": 20}
    )
    done_next = await second.until("response.done")
    # A normal answer, cut at the token limit asked for.
    assert (done_next["status"], done_next["reason"]) == ("incomplete", "max_output_tokens")
    assert done_next["usage"]["output_tokens_delivered"] == 20
    assert done_next["response_id"] != response_id
    await second.close()


async def test_takeover_keeps_one_assistant_turn_per_call(
    start_worker: Any, redis_url: str
) -> None:
    """After a takeover the call appears in exactly one assistant turn of the history."""
    _, second, ready, call = await _pending_call_moved(start_worker, redis_url)
    await second.send({"type": "tool.result", "call_id": call["call_id"], "output": 1})
    await second.until("tool.result.accepted")
    turns = await _stored_turns_when(
        redis_url, ready["session_id"], lambda ts: any(t.role == "tool" for t in ts)
    )
    naming = [t for t in turns if call["call_id"] in [c.call_id for c in t.tool_calls]]
    assert len(naming) == 1, turns
    await second.close()


async def test_takeover_before_the_owner_stored_the_call_keeps_it(
    start_worker: Any, redis_url: str
) -> None:
    """The client resumes on B before A's batch with the call's round reached the
    store (only the ledger has the call): B still puts the call, then its result,
    in the history, once."""
    # A writes every 2 s and prefills for 4 s: the store has the running response
    # (first batch) long before the call, and A's next batch comes 2 s after it.
    slow = ("--store-flush-ms", "2000", "--prefill-per-token-ms", "400")
    _, second, ready, call = await _pending_call_moved(start_worker, redis_url, *slow)
    await second.send({"type": "tool.result", "call_id": call["call_id"], "output": 1})
    await second.until("tool.result.accepted")
    turns = await _stored_turns_when(
        redis_url, ready["session_id"], lambda ts: any(t.role == "tool" for t in ts)
    )
    assert [t.role for t in turns] == ["user", "assistant", "tool"], turns
    assert [c.call_id for c in turns[1].tool_calls] == [call["call_id"]]
    assert (turns[2].tool_call_id, turns[2].text) == (call["call_id"], "1")
    await second.close()
