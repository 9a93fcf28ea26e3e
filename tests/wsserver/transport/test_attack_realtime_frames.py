"""Attacks on how ``/v1/realtime`` writes one native event as several frames.

The first frame of an event is written by the native step; the others wait at the
front of the connection messages. An answer queued while they wait (an error for a
bad client event) must follow all of them, and its ``event_id`` must name the last of
them: the id is the client's place in the stream when it resumes.
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest
import redis.asyncio as redis_asyncio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from protocol.codes import CloseCode
from protocol.dialects.realtime.event_ids import parse_event_id
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import wait_until
from wsserver.transport.realtime import RealtimeConnection

TEXT_ONLY = {"type": "session.update", "session": {"output_modalities": ["text"]}}
USER_ITEM = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}


async def _stalling_client(url: str, headers: dict[str, str]) -> ClientConnection:
    """A client whose tiny receive buffer backs the worker up as soon as it stops reading."""
    host, port = url.removeprefix("ws://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    sock.setblocking(False)
    return await connect(
        url + "/v1/realtime?model=m",
        sock=sock,
        max_queue=1,
        compression=None,
        max_size=None,
        additional_headers=headers,
    )


async def _receive(ws: ClientConnection) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(await ws.recv())
    return event


async def _until(ws: ClientConnection, kind: str) -> list[dict[str, Any]]:
    events = [await _receive(ws)]
    while events[-1]["type"] != kind:
        events.append(await _receive(ws))
    return events


async def _answered(url: str) -> tuple[ClientConnection, dict[str, Any], list[dict[str, Any]]]:
    """A session asked one text answer: its connection, session.created, the answer."""
    first = await connect(url + "/v1/realtime?model=m", compression=None, max_size=None)
    created = await _receive(first)
    await _receive(first)  # conversation.created
    for event in (TEXT_ONLY, {"type": "conversation.item.create", "item": USER_ITEM}):
        await first.send(json.dumps(event))
    await first.send(json.dumps({"type": "response.create"}))
    return first, created, await _until(first, "rate_limits.updated")


async def _answers_again(ws: ClientConnection) -> None:
    """The session is still this connection's: another answer completes on it."""
    await ws.send(json.dumps({"type": "conversation.item.create", "item": USER_ITEM}))
    await ws.send(json.dumps({"type": "response.create"}))
    done = next(e for e in await _until(ws, "rate_limits.updated") if e["type"] == "response.done")
    assert done["response"]["status"] == "completed", done


async def _refused_replay_unavailable(url: str, created: dict[str, Any], seen: str) -> None:
    """A resume from ``seen`` is answered ``replay_unavailable``, then closed 1008."""
    second = await connect(
        url + "/v1/realtime?model=m",
        compression=None,
        additional_headers={
            "X-Wsserver-Session": created["resume"]["session_id"],
            "X-Wsserver-Resume-Token": created["resume"]["resume_token"],
            "X-Wsserver-Last-Event-Id": seen,
        },
    )
    refusal = await _receive(second)
    assert refusal["type"] == "error", refusal
    assert refusal["error"]["code"] == "replay_unavailable", refusal
    with pytest.raises(ConnectionClosed):
        await second.recv()
    assert second.close_code == CloseCode.POLICY_VIOLATION


async def test_an_error_queued_while_an_event_is_half_written_follows_all_of_it(
    start_server: StartServer,
) -> None:
    # A long answer: its response.done becomes several frames that each hold the text.
    server = await start_server(
        socket_send_buffer=8192,
        write_limit=4096,
        answer_tokens=6000,
        max_output_tokens=6000,
        decode_rate=100_000.0,
        # The whole answer stays buffered, however many frames its deltas became (that
        # depends on how fast this client read them): the resume must be served.
        replay_max_events=20_000,
        replay_max_bytes=64 << 20,
    )
    url = url_of(server)
    first, created, answer = await _answered(url)
    done_at = next(i for i, e in enumerate(answer) if e["type"] == "response.output_text.done")
    seen = next(e["event_id"] for e in reversed(answer[:done_at]) if parse_event_id(e["event_id"]))
    first.transport.abort()  # dropped, not closed: the session waits to be resumed
    await wait_until(lambda: not server.connections)
    # The resume replays the answer's end: its first frame is the whole text.
    second = await _stalling_client(
        url,
        {
            "X-Wsserver-Session": created["resume"]["session_id"],
            "X-Wsserver-Resume-Token": created["resume"]["resume_token"],
            "X-Wsserver-Last-Event-Id": seen,
        },
    )
    second.transport.pause_reading()
    (connection,) = server.connections
    assert isinstance(connection, RealtimeConnection)
    # The writer waits on one of its frames with the rest of them queued.
    await wait_until(lambda: connection.ws.paused and bool(connection._control))
    queued = len(connection._control)
    await second.send(json.dumps({"type": "no.such.event", "event_id": "bad"}))
    await wait_until(lambda: len(connection._control) == queued + 1)
    second.transport.resume_reading()
    events = await _until(second, "error")
    kinds = [e["type"] for e in events]
    # The whole of the answer's end first (one native event, and the rate limits that
    # follow its response.done), then the error.
    assert kinds[0] == "response.output_text.done", kinds
    assert kinds[-3:] == ["response.done", "rate_limits.updated", "error"], kinds
    assert "error" not in kinds[:-1], kinds
    last = parse_event_id(events[-3]["event_id"])
    assert last is not None, events[-3]
    # The error's id names the last session event before it on the wire.
    assert events[-1]["event_id"].startswith(f"event_{last.seq}_{last.index}_c"), events[-1]
    await second.close()


async def test_an_answer_longer_than_the_replay_refuses_the_resume_in_band(
    start_server: StartServer,
) -> None:
    """The rebuild starts at the quiet point before the answer; an answer of more events
    than the replay holds has pushed that out (the seen event is still there): the
    resume is refused with ``replay_unavailable`` and a named close, never a crash."""
    server = await start_server(
        replay_max_events=16, answer_tokens=100, max_output_tokens=100, decode_rate=2000.0
    )
    url = url_of(server)
    first, created, answer = await _answered(url)
    deltas = [e for e in answer if e["type"] == "response.output_text.delta"]
    assert len(deltas) > 16, "the answer's events outnumber the replay"
    seen = next(e["event_id"] for e in reversed(answer) if parse_event_id(e["event_id"]))
    first.transport.abort()
    await wait_until(lambda: not server.connections)
    await _refused_replay_unavailable(url, created, seen)


async def test_a_resume_another_worker_must_refuse_leaves_the_session_with_its_owner(
    start_server: StartServer, redis_url: str
) -> None:
    """Refused on a second worker, the resume takes nothing over: the first worker's
    live connection goes on (it used to be closed 4003, session moved)."""
    limits = {"replay_max_events": 16, "answer_tokens": 100, "max_output_tokens": 100}
    owner = await start_server(store=redis_url, decode_rate=2000.0, **limits)
    other = await start_server(store=redis_url, decode_rate=2000.0, **limits)
    first, created, answer = await _answered(url_of(owner))
    seen = next(e["event_id"] for e in reversed(answer) if parse_event_id(e["event_id"]))
    session_id = created["resume"]["session_id"]
    runtime = owner.sessions[session_id]
    async with redis_asyncio.Redis.from_url(redis_url) as admin:

        async def stored_seq() -> int:
            stream = await admin.hget(f"wss:{{{session_id}}}:meta", "stream")
            return int(json.loads(stream)["last_seq"]) if stream else 0

        for _ in range(500):  # the owner's writes reach the store (a bound, not a timing)
            if await stored_seq() >= runtime.last_seq:
                break
            await asyncio.sleep(0.01)
    await _refused_replay_unavailable(url_of(other), created, seen)
    await _answers_again(first)
    assert not other.sessions, "nothing was taken over"
    await first.close()


async def test_a_corrupt_stored_log_refuses_the_resume_in_band(
    start_server: StartServer, redis_url: str
) -> None:
    """A stored event that does not decode (a foreign write): the resume on another
    worker is refused ``replay_unavailable``, not a crash (1011), and nothing is taken."""
    owner = await start_server(store=redis_url, answer_tokens=5)
    other = await start_server(store=redis_url, answer_tokens=5)
    first, created, answer = await _answered(url_of(owner))
    seen = next(e["event_id"] for e in reversed(answer) if parse_event_id(e["event_id"]))
    session_id = created["resume"]["session_id"]
    log = f"wss:{{{session_id}}}:log"
    async with redis_asyncio.Redis.from_url(redis_url) as admin:
        for _ in range(500):  # the owner's writes reach the store (a bound, not a timing)
            entries = await admin.xrange(log)
            if len(entries) >= owner.sessions[session_id].last_seq:
                break
            await asyncio.sleep(0.01)
        await admin.delete(log)
        for index, (entry_id, fields) in enumerate(entries):
            await admin.xadd(log, {b"p": b"\xc1" if index == 1 else fields[b"p"]}, id=entry_id)
    await _refused_replay_unavailable(url_of(other), created, seen)
    assert not other.sessions, "nothing was taken over"
    await _answers_again(first)
    await first.close()
