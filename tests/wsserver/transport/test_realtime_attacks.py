"""Attacks on ``/v1/realtime`` with raw frames against a real ``wsserver serve``:
resumes of resumed connections, items the session refuses, and what one connection
can make the worker hold."""

from __future__ import annotations

import asyncio
import base64
import json
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.processes import WorkerProcess
from tests.wsserver.audio_fixtures import pcm
from wsserver.frontdoor.api_keys import key_line, new_api_key

USER_ITEM = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}


class Served:
    """A worker with one API key."""

    def __init__(self, worker: WorkerProcess, key: str) -> None:
        self.worker, self.key = worker, key

    async def connect(self, **headers: str) -> ClientConnection:
        return await connect(
            self.worker.url + "/v1/realtime?model=m",
            additional_headers={"Authorization": f"Bearer {self.key}", **headers},
            compression=None,
            max_size=None,
        )

    def rss_bytes(self) -> int:
        """The worker process's resident set size."""
        assert self.worker.process is not None
        status = Path(f"/proc/{self.worker.process.pid}/status").read_text()
        line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
        return int(line.split()[1]) * 1024


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Short answers (8 tokens, 50 a second)."""
    key = new_api_key()
    keys = tmp_path_factory.mktemp("realtime-attacks") / "keys"
    keys.write_text(key_line("alice", key) + "\n")
    worker = WorkerProcess(
        "--api-keys-file",
        str(keys),
        "--answer-tokens",
        "8",
        "--decode-rate",
        "50",
        # A flood within the connection's message rate (the tests send tens of thousands).
        "--max-messages-per-second",
        "100000",
        "--max-message-burst",
        "100000",
        "--message-burst-per-principal",
        "0",
        name="realtime-attacks-worker",
    ).start()
    try:
        yield Served(worker, key)
    finally:
        worker.stop()
        assert "Traceback" not in "".join(worker.lines), "".join(worker.lines)[-5000:]


async def receive(ws: ClientConnection) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 10))
    return event


async def until(ws: ClientConnection, *kinds: str) -> list[dict[str, Any]]:
    """Every event up to and with the next one of one of the types ``kinds``."""
    events = [await receive(ws)]
    while events[-1]["type"] not in kinds:
        events.append(await receive(ws))
    return events


async def text_answer(ws: ClientConnection) -> list[dict[str, Any]]:
    """A text answer to "hi": every event up to the ``rate_limits.updated`` after it."""
    text_only = {"type": "session.update", "session": {"output_modalities": ["text"]}}
    await ws.send(json.dumps(text_only))
    await ws.send(json.dumps({"type": "conversation.item.create", "item": USER_ITEM}))
    await ws.send(json.dumps({"type": "response.create"}))
    return await until(ws, "rate_limits.updated")


def resume_headers(created: dict[str, Any], last: str) -> dict[str, str]:
    return {
        "X-Wsserver-Session": created["resume"]["session_id"],
        "X-Wsserver-Resume-Token": created["resume"]["resume_token"],
        "X-Wsserver-Last-Event-Id": last,
    }


async def test_a_resumed_connection_can_be_resumed_from_its_last_event(served: Served) -> None:
    """The last event an app sees after an answer is ``rate_limits.updated``, a
    connection event; on a resumed connection its id must be one a resume takes."""
    ws = await served.connect()
    created = await receive(ws)
    await receive(ws)  # conversation.created
    last = (await text_answer(ws))[-1]["event_id"]
    ws.transport.abort()
    ws = await served.connect(**resume_headers(created, last))
    events = await text_answer(ws)
    assert [e["type"] for e in events].count("response.done") == 1
    last = events[-1]["event_id"]
    ws.transport.abort()
    ws = await served.connect(**resume_headers(created, last))
    # Nothing was missed: the resumed connection answers the next turn, no error first.
    events = await text_answer(ws)
    assert "error" not in [e["type"] for e in events], events[:2]
    assert [e["type"] for e in events].count("response.done") == 1
    await ws.close()


async def test_an_item_the_session_refuses_is_not_reported_added(served: Served) -> None:
    """A user text over ``--max-input-chars`` and the output of a call that does not
    exist are refused by the session: the client must get the ``error`` alone, not
    ``conversation.item.added`` / ``done`` for an item the conversation never holds."""
    ws = await served.connect()
    await until(ws, "conversation.created")
    long_text = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "x" * 200_000}],
    }
    unknown_call = {"type": "function_call_output", "call_id": "call_nope", "output": "{}"}
    for item in (long_text, unknown_call):
        await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
        events = await until(ws, "error")
        assert [e["type"] for e in events] == ["error"], [e["type"] for e in events]
    await ws.close()


async def test_one_connection_cannot_make_the_worker_hold_its_items_unbounded(
    served: Served,
) -> None:
    """The items kept for ``conversation.item.retrieve`` are bounded in count (256) and
    in text (4 Mi characters): 250 user items at the input bound (100,000 characters
    each, 25 MB) must not all stay in the worker's memory while the connection lives
    (the conversation itself forgets past ``--history-max-chars``)."""
    ws = await served.connect()
    await until(ws, "conversation.created")
    await text_answer(ws)  # the worker's steady state before measuring
    before = served.rss_bytes()
    for n in range(250):
        text = [{"type": "input_text", "text": f"{n:04d}" + "o" * 99_990}]
        item = {"type": "message", "role": "user", "content": text}
        await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
        await until(ws, "conversation.item.done")
    grown = served.rss_bytes() - before
    assert grown < 16 * 1024 * 1024, f"the worker grew {grown // 2**20} MiB for one connection"
    await ws.close()


async def test_a_client_event_id_used_again_later_is_still_a_new_request(served: Served) -> None:
    """In the Realtime API ``event_id`` is the client's label for an event, not a
    request key: a client that numbers its events per connection (``evt_1``, ...)
    uses the same ids again after a reconnect. A later ``response.create`` that
    carries an id an earlier, finished one carried must still be answered."""
    ws = await served.connect()
    await until(ws, "conversation.created")
    text_only = {"type": "session.update", "session": {"output_modalities": ["text"]}}
    await ws.send(json.dumps(text_only))
    for turn in range(2):
        await ws.send(json.dumps({"type": "conversation.item.create", "item": USER_ITEM}))
        await ws.send(json.dumps({"type": "response.create", "event_id": "evt_2"}))
        events = await until(ws, "rate_limits.updated", "error")
        kinds = [e["type"] for e in events]
        assert "error" not in kinds, (
            turn,
            [e.get("error") for e in events if e["type"] == "error"],
        )
        assert kinds.count("response.done") == 1
    await ws.close()


async def test_sessions_that_ended_leave_no_instructions_behind_in_the_worker(
    served: Served,
) -> None:
    """What the worker keeps per Realtime session for a resume (16384 sessions) holds
    only what the native session does not: 80 sessions that each set 100 000
    characters of instructions (400 KB) and then end must not leave 32 MB behind."""
    before = served.rss_bytes()
    instructions = "\U0001f600" * 100_000
    for _ in range(80):
        ws = await served.connect()
        await until(ws, "conversation.created")
        update = {"type": "session.update", "session": {"instructions": instructions}}
        await ws.send(json.dumps(update, ensure_ascii=False))
        await until(ws, "session.updated")
        await ws.close()  # 1000: the session ends
    grown = served.rss_bytes() - before
    assert grown < 16 * 1024 * 1024, f"the worker kept {grown // 2**20} MiB of ended sessions"


async def test_a_client_that_stops_reading_cannot_queue_replies_without_bound(
    served: Served,
) -> None:
    """``--outbox-max-bytes`` (1 MiB) bounds a connection's unsent output, then 4000.
    The dialect's own answers (an ``error`` per bad event here) bypass it: a client
    that stops reading and goes on sending within its message rate makes the worker
    queue every answer, without bound."""
    ws = await served.connect()
    await until(ws, "conversation.created")
    before = served.rss_bytes()
    ws.transport.pause_reading()
    bad = json.dumps({"type": "no.such.event", "event_id": "evt_" + "x" * 100})
    closed = False
    for _ in range(120):
        try:
            for _ in range(1000):
                await ws.send(bad)
        except ConnectionClosed:
            closed = True
            break
        await asyncio.sleep(0.01)
    grown = served.rss_bytes() - before
    ws.transport.abort()
    assert closed or grown < 32 * 1024 * 1024, (
        f"a reader that stopped made the worker hold {grown >> 20} MiB of answers"
    )


async def fill_socket_then_update(served: Served, session: Any) -> int:
    """Fill the socket with 16 MB of answers unread, send 300 ``session.update`` with
    ``session(n)``; the worker's growth in bytes at its largest."""
    ws = await served.connect()
    await until(ws, "conversation.created")
    # A user text at the input bound (100,000 characters), kept for retrieve.
    text = [{"type": "input_text", "text": "o" * 100_000}]
    item = {"id": "big", "type": "message", "role": "user", "content": text}
    await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
    await until(ws, "conversation.item.done")
    before = served.rss_bytes()
    ws.transport.pause_reading()
    # 16 MB of answers: the socket's buffers fill, the writer waits.
    for _ in range(160):
        await ws.send(json.dumps({"type": "conversation.item.retrieve", "item_id": "big"}))
    for n in range(300):
        await ws.send(json.dumps({"type": "session.update", "session": session(n)}))
    grown = 0
    for _ in range(40):  # the worker has read the 300 events within a few polls
        grown = max(grown, served.rss_bytes() - before)
        await asyncio.sleep(0.05)
    ws.transport.abort()
    return grown


async def test_pending_session_updates_with_big_tools_are_bounded(served: Served) -> None:
    """As below, with what the settings do keep: a tool whose parameters schema is
    800 KB, 300 times while the socket is full."""

    def session(n: int) -> dict[str, Any]:
        schema = {"type": "object", "description": f"{n}" + "p" * 800_000}
        return {"tools": [{"type": "function", "name": "big", "parameters": schema}]}

    grown = await fill_socket_then_update(served, session)
    assert grown < 64 * 1024 * 1024, f"300 pending updates made the worker hold {grown >> 20} MiB"


async def test_pending_session_updates_hold_no_more_than_their_settings(served: Served) -> None:
    """Each ``session.update`` is remembered until its ``session.updated`` is written
    (256 at most), with the whole patch as sent: a client that stops reading (its
    socket full) and sends 300 updates whose accepted-but-unused ``voice`` object is
    800 KB makes the worker hold 200 MB, though their settings keep no such object."""

    def session(n: int) -> dict[str, Any]:
        return {"audio": {"output": {"voice": {"id": f"voice_{n}_" + "v" * 800_000}}}}

    grown = await fill_socket_then_update(served, session)
    assert grown < 64 * 1024 * 1024, f"300 pending updates made the worker hold {grown >> 20} MiB"


async def test_a_refused_resume_leaves_the_live_connection_serving(served: Served) -> None:
    """A resume whose last event id names an event never sent is refused (1008) and
    "leaves the session as it was" (docs/REALTIME.md): the connection the session is
    live on must go on serving, not be closed by the refused resume."""
    live = await served.connect()
    created = await receive(live)
    await receive(live)  # conversation.created
    last = (await text_answer(live))[-1]["event_id"]
    seq = int(last.split("_")[1])
    forged = await served.connect(**resume_headers(created, f"event_{seq}_99"))
    refusal = await receive(forged)
    assert refusal["error"]["code"] == "invalid_event_id"
    events = await text_answer(live)
    assert [e["type"] for e in events].count("response.done") == 1
    await live.close()


@pytest.fixture(scope="module")
def small_replay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A replay buffer of 64 events; answers of 8 tokens (about 10 native events each)."""
    key = new_api_key()
    keys = tmp_path_factory.mktemp("realtime-attacks-acks") / "keys"
    keys.write_text(key_line("alice", key) + "\n")
    flags = ("--replay-max-events", "64", "--answer-tokens", "8", "--decode-rate", "400")
    worker = WorkerProcess("--api-keys-file", str(keys), *flags, name="realtime-attacks-acks")
    try:
        yield Served(worker.start(), key)
    finally:
        worker.stop()
        assert "Traceback" not in "".join(worker.lines), "".join(worker.lines)[-5000:]


def speech_onset_24k() -> bytes:
    """300 ms of silence then the first 600 ms of the hello fixture, at 24 kHz."""
    samples = array("h", pcm("speech_hello")[: 16 * 2 * 600])
    # 16 kHz to 24 kHz: every sample of each pair once, the second of it twice.
    upsampled = array("h", (samples[i * 2 // 3] for i in range(len(samples) * 3 // 2)))
    return bytes(24 * 2 * 300) + upsampled.tobytes()


async def test_turn_detection_off_mid_speech_leaves_the_session_resumable(
    small_replay: Served,
) -> None:
    """``turn_detection: null`` while speech is in progress: the core stops detecting
    and never ends that speech, so the dialect's speech in progress never ends and no
    point is quiet again: nothing is acked, and once the answers that follow pass the
    replay bounds the session can no longer be resumed (``replay_unavailable``)."""
    ws = await small_replay.connect()
    created = await receive(ws)
    await receive(ws)  # conversation.created
    audio = speech_onset_24k()
    for offset in range(0, len(audio), 4800):  # 100 ms each, paced near real time
        chunk = base64.b64encode(audio[offset : offset + 4800]).decode()
        await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
        await asyncio.sleep(0.08)
    await until(ws, "input_audio_buffer.speech_started")
    manual = {"audio": {"input": {"turn_detection": None}}}
    await ws.send(json.dumps({"type": "session.update", "session": manual}))
    await until(ws, "session.updated")
    last = ""
    for _ in range(8):  # about 100 native events: past the replay buffer
        last = (await text_answer(ws))[-1]["event_id"]
    ws.transport.abort()
    ws = await small_replay.connect(**resume_headers(created, last))
    events = await text_answer(ws)
    assert "error" not in [e["type"] for e in events], events[0]
    await ws.close()
