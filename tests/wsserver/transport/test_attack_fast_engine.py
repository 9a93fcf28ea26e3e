"""A hostile or unlucky client against the fast send path, next to the default one.

Every test starts a real worker on loopback and runs once per send path (or drives
both in one test, to compare their bytes): a reader that stalls and resumes
elsewhere, resets and closes at awkward moments, racing resumes, a half-closed TCP
connection, awkward text. Nothing may be lost or doubled, and no traceback or
asyncio complaint may reach the log.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import socket
import struct
from collections.abc import AsyncIterator

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from protocol.encoding import JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.transport.test_hostile_frames import HOSTILE, RawSocket
from tests.wsserver.wire import RawClient, text_of, wait_until
from wsserver.session.runtime import SessionRuntime
from wsserver.transport.websocket import MAX_QUEUED_CONTROL
from wsserver.worker.server import WorkerServer

BOTH = pytest.mark.both_engines

WAIT = 10.0


@pytest.fixture(autouse=True)
async def quiet_log(caplog: pytest.LogCaptureFixture) -> AsyncIterator[pytest.LogCaptureFixture]:
    """After the test: no traceback and no complaint from asyncio in the log."""
    yield caplog
    gc.collect()  # a task whose exception nobody retrieved logs it when collected
    await asyncio.sleep(0)
    records = [r for when in ("setup", "call", "teardown") for r in caplog.get_records(when)]
    noisy = [
        r
        for r in records
        if r.exc_info is not None or (r.name == "asyncio" and r.levelno >= logging.WARNING)
    ]
    assert not noisy, [r.getMessage() for r in noisy]


def _reset_on_close(client: RawClient) -> None:
    """Make the client's next abort send a TCP reset (RST), not a FIN."""
    sock = client.ws.transport.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@BOTH
async def test_a_reset_right_after_resume_writes_nothing_into_the_dead_socket(
    start_server: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    # The reset reaches the worker while the replay is being written: it must stop
    # at the first failed write (asyncio warns for every write after that one).
    server = await start_server(decode_rate=5000.0, answer_tokens=2000)
    url = url_of(server)
    first = await RawClient.connect(url)
    ready = await first.start()
    await first.send({"type": "response.create", "input": "fill the replay buffer"})
    await first.until("response.done")
    first.abort()
    await wait_until(lambda: not server.connections, timeout=WAIT)
    for _ in range(2):
        again = await RawClient.connect(url)
        _reset_on_close(again)
        await again.resume(ready, 0)
        again.abort()
        await wait_until(lambda: not server.connections, timeout=WAIT)
    assert not [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    runtime = server.sessions[ready["session_id"]]
    assert runtime.transport is None, "still resumable"


# Astral, combining marks, the JS line separators, NUL and the other control
# characters, a BOM, noncharacters, and a delta past the 16-bit frame length.
AWKWARD_TEXT = [
    "𝄞🎉👩‍👩‍👧",
    "e\u0301\u0308 a\u20dd",
    "line\u2028para\u2029end",
    "nul \x00 and \x1f \x7f",
    "\ufeff\ufffe\uffff\U0010ffff",
    '"</script>\\',
    "x" * 70_000 + "é",
]


async def _frames_for(start_server: StartServer, engine: str) -> list[tuple[int, bytes]]:
    """The frames a worker on ``engine`` writes for the same queued session events."""
    server = await start_server(ws_engine=engine)
    client = await RawSocket.open(server)
    try:
        client.send_json({"type": "session.start"})
        ready = await client.until_type("session.ready")
        runtime = server.sessions[ready["session_id"]]
        frames = []
        for text in AWKWARD_TEXT:
            runtime.session.outbox.push_text('resp_"\u2028', text, 1)
            runtime.wake()
            frames.append(await asyncio.wait_for(client.next_frame(), WAIT))
        runtime.session.outbox.push_audio("resp_a", 7, bytes(range(256)) * 300, 20.0)
        runtime.wake()
        frames.append(await asyncio.wait_for(client.next_frame(), WAIT))
        return frames
    finally:
        client.abort()


async def test_awkward_text_and_audio_frames_are_byte_identical_on_both_paths(
    start_server: StartServer,
) -> None:
    fast = await _frames_for(start_server, "fast")
    default = await _frames_for(start_server, "websockets")
    assert [f[0] for f in fast] == [0x1] * len(AWKWARD_TEXT) + [0x2]
    assert fast == default
    assert json.loads(fast[-2][1])["delta"] == AWKWARD_TEXT[-1]


@BOTH
async def test_a_lone_surrogate_is_voided_with_one_line_and_resumes(
    start_server: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start_server()
    client = await RawClient.connect(url_of(server))
    ready = await client.start()
    runtime = server.sessions[ready["session_id"]]
    runtime.session.outbox.push_text("resp_x", "bad \ud800 text", 1)
    runtime.wake()
    assert await client.closed_code() == 1011
    await wait_until(lambda: runtime.transport is None, timeout=WAIT)
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(errors) == 1 and "could not be encoded" in errors[0].getMessage()
    again = await RawClient.connect(url_of(server))
    await again.resume(ready, 0)
    await again.until("session.ready")
    voided = await again.recv()
    assert (voided["seq"], voided["delta"]) == (1, "bad \ufffd text")
    await again.close()


STALL = {
    "decode_rate": 5000.0,
    "answer_tokens": 800,
    "socket_send_buffer": 8192,
    "write_limit": 4096,
    "close_timeout": 0.15,
}


async def _stalled_client(url: str, *, subprotocol: str, deflate: bool = False) -> RawClient:
    """A client with a tiny receive buffer, so that a pause backs the worker up at once."""
    host, port = url.removeprefix("ws://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    sock.setblocking(False)
    ws = await connect(
        url,
        sock=sock,
        max_queue=1,
        subprotocols=[Subprotocol(subprotocol)],
        compression="deflate" if deflate else None,
    )
    return RawClient(ws)


async def _stall_mid_answer(server: WorkerServer, client: RawClient) -> SessionRuntime:
    """Start an answer, read a little of it, stop reading until the worker is paused."""
    await client.send({"type": "response.create", "input": "stall in the middle"})
    while sum(m.get("type") == "response.text.delta" for m in client.seen) < 20:
        await client.recv()
    client.ws.transport.pause_reading()
    (connection,) = server.connections
    await wait_until(lambda: connection.ws.paused, timeout=WAIT)
    runtime = connection.runtime
    assert isinstance(runtime, SessionRuntime)
    return runtime


def _seqs(*clients: RawClient) -> list[int]:
    return [m["seq"] for c in clients for m in c.seen if "seq" in m]


@BOTH
@pytest.mark.parametrize(
    ("subprotocol", "deflate"),
    [(JSON_SUBPROTOCOL, False), (MSGPACK_SUBPROTOCOL, False), (JSON_SUBPROTOCOL, True)],
)
async def test_a_reader_that_stalls_mid_answer_resumes_elsewhere_with_nothing_lost_or_doubled(
    start_server: StartServer, subprotocol: str, deflate: bool
) -> None:
    # Compressed frames are small: a longer answer fills the same buffers.
    server = await start_server(
        **{**STALL, "answer_tokens": 4000 if deflate else 800, "decode_rate": 20_000.0},
        compression=deflate,
    )
    url = url_of(server)
    stalled = await _stalled_client(url, subprotocol=subprotocol, deflate=deflate)
    assert bool(stalled.ws.protocol.extensions) is deflate
    ready = await stalled.start()
    runtime = await _stall_mid_answer(server, stalled)
    # The new connection takes over while the old one is still paused.
    resumed = await RawClient.connect(url, subprotocol=subprotocol)
    await resumed.resume(ready, _seqs(stalled)[-1])
    assert (await resumed.until("session.ready"))["resumed"] is True
    done = await resumed.until("response.done", timeout=WAIT * 3)
    assert done["status"] == "completed"
    seqs = _seqs(stalled, resumed)
    assert seqs == list(range(1, len(seqs) + 1))
    response = runtime.session.last_response
    assert response is not None
    assert text_of(stalled.seen + resumed.seen) == response.delivered_text()
    stalled.abort()
    await resumed.close()


@BOTH
@pytest.mark.parametrize("kind", ["response.interrupt", "response.cancel"])
async def test_an_interrupt_while_the_worker_is_paused_stops_output_and_ends_once(
    start_server: StartServer, kind: str
) -> None:
    server = await start_server(**{**STALL, "answer_tokens": 50_000})
    client = await _stalled_client(url_of(server), subprotocol=JSON_SUBPROTOCOL)
    await client.start()
    runtime = await _stall_mid_answer(server, client)
    await client.send({"type": kind})
    await wait_until(lambda: runtime.session.active is None, timeout=WAIT)
    generated = runtime.session.usage.output_tokens_generated
    client.ws.transport.resume_reading()
    done = await client.until("response.done", timeout=WAIT * 3)
    assert done["status"] in ("interrupted", "cancelled")
    # Nothing after the done, nothing twice; the engine stopped with the abort.
    await client.send({"type": "ping", "id": "after"})
    await client.until("pong")
    events = [m for m in client.seen if "seq" in m]
    assert [m["seq"] for m in events] == list(range(1, len(events) + 1))
    assert [m["type"] for m in events].count("response.done") == 1
    assert events[-1]["type"] == "response.done"
    assert runtime.session.usage.output_tokens_generated == generated
    await client.close()


@BOTH
async def test_a_close_frame_while_paused_from_a_peer_that_never_reads_is_cut_and_ends(
    start_server: StartServer,
) -> None:
    server = await start_server(**{**STALL, "answer_tokens": 50_000})
    client = await _stalled_client(url_of(server), subprotocol=JSON_SUBPROTOCOL)
    ready = await client.start()
    runtime = await _stall_mid_answer(server, client)
    # A close frame, and then silence: the client never reads the answer to it.
    client.ws.protocol.send_close(1000, "bye")
    client.ws.send_data()
    await wait_until(lambda: not server.connections, timeout=WAIT)
    await wait_until(lambda: ready["session_id"] not in server.sessions, timeout=WAIT)
    assert runtime.session.active is None, "an explicit close aborts the answer"
    client.abort()


@BOTH
async def test_two_connections_racing_to_resume_one_wins_and_gets_everything(
    start_server: StartServer,
) -> None:
    server = await start_server(**STALL)
    url = url_of(server)
    first = await RawClient.connect(url)
    ready = await first.start()
    await first.send({"type": "response.create", "input": "race me"})
    await first.until("response.text.delta")
    first.abort()
    a, b = await RawClient.connect(url), await RawClient.connect(url)
    last = _seqs(first)[-1]
    await asyncio.gather(a.resume(ready, last), b.resume(ready, last))

    async def outcome(client: RawClient) -> str:
        try:
            await client.until("response.done", timeout=WAIT * 3)
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 4002, closed
            return "replaced"
        return "done"

    results = await asyncio.gather(outcome(a), outcome(b))
    assert sorted(results) == ["done", "replaced"]
    winner = (a, b)[results.index("done")]
    seqs = _seqs(first, winner)
    assert seqs == list(range(1, len(seqs) + 1))
    response = server.sessions[ready["session_id"]].session.last_response
    assert response is not None
    assert text_of(first.seen + winner.seen) == response.delivered_text()
    a.abort()
    b.abort()


@BOTH
async def test_a_client_that_half_closes_tcp_mid_answer_can_resume(
    start_server: StartServer,
) -> None:
    server = await start_server(**STALL)
    url = url_of(server)
    client = await RawClient.connect(url)
    ready = await client.start()
    await client.send({"type": "response.create", "input": "half close"})
    await client.until("response.text.delta")
    client.ws.transport.write_eof()
    await wait_until(lambda: not server.connections, timeout=WAIT)
    runtime = server.sessions[ready["session_id"]]
    assert runtime.transport is None
    client.abort()
    resumed = await RawClient.connect(url)
    await resumed.resume(ready, _seqs(client)[-1])
    await resumed.until("response.done", timeout=WAIT * 3)
    seqs = _seqs(client, resumed)
    assert seqs == list(range(1, len(seqs) + 1))
    await resumed.close()


@BOTH
async def test_a_reader_that_stops_forever_is_closed_at_the_bound_and_let_go(
    start_server: StartServer,
) -> None:
    bound = 4096
    server = await start_server(
        **{**STALL, "answer_tokens": 2000, "decode_rate": 20_000.0},
        outbox_max_bytes=bound,
        slow_consumer_close_timeout=0.3,
    )
    client = await _stalled_client(url_of(server), subprotocol=JSON_SUBPROTOCOL)
    ready = await client.start()
    runtime = await _stall_mid_answer(server, client)
    # Past the bound the worker closes (4000, unread here) and cuts TCP at the deadline.
    await wait_until(lambda: not server.connections, timeout=WAIT)
    assert runtime.transport is None
    assert runtime.session.outbox.peak_bytes <= bound + 64
    client.abort()
    resumed = await RawClient.connect(url_of(server))
    await resumed.resume(ready, _seqs(client)[-1])
    await resumed.until("response.done", timeout=WAIT * 3)
    seqs = _seqs(client, resumed)
    assert seqs == list(range(1, len(seqs) + 1))
    response = runtime.session.last_response
    assert response is not None
    assert text_of(client.seen + resumed.seen) == response.delivered_text()
    await resumed.close()


@BOTH
async def test_a_ping_flood_from_a_paused_reader_is_let_go(start_server: StartServer) -> None:
    server = await start_server(
        **{**STALL, "answer_tokens": 50_000}, max_pings_per_second=5, max_ping_burst=20
    )
    client = await _stalled_client(url_of(server), subprotocol=JSON_SUBPROTOCOL)
    ready = await client.start()
    runtime = await _stall_mid_answer(server, client)
    for _ in range(200):
        client.ws.protocol.send_ping(b"p")
    client.ws.send_data()
    # 4005 is terminal: the close frame waits behind the unread output, TCP is cut.
    await wait_until(lambda: not server.connections, timeout=WAIT)
    await wait_until(lambda: ready["session_id"] not in server.sessions, timeout=WAIT)
    assert runtime.session.active is None
    client.abort()


@BOTH
async def test_a_close_frame_during_the_replay_of_a_resume_ends_the_session(
    start_server: StartServer,
) -> None:
    # Time enough to read the whole replay before the close frame.
    server = await start_server(**{**STALL, "answer_tokens": 2000, "close_timeout": 2.0})
    url = url_of(server)
    first = await RawClient.connect(url)
    ready = await first.start()
    await first.send({"type": "response.create", "input": "long replay"})
    await first.until("response.done", timeout=WAIT * 3)
    first.abort()
    await wait_until(lambda: not server.connections, timeout=WAIT)
    again = await RawClient.connect(url)
    await again.resume(ready, 0)
    again.ws.protocol.send_close(1000, "")
    again.ws.send_data()
    assert await again.closed_code() == 1000
    await wait_until(lambda: ready["session_id"] not in server.sessions, timeout=WAIT)
    seqs = _seqs(again)
    assert seqs == list(range(1, len(seqs) + 1))


@BOTH
# Found while parsing (rsv2), and found by recv() afterwards (utf-8): two close paths.
@pytest.mark.parametrize("case", ["rsv2", "invalid utf-8 text"])
async def test_a_hostile_frame_from_a_paused_reader_is_cut_at_the_close_deadline(
    start_server: StartServer, case: str
) -> None:
    server = await start_server(**{**STALL, "answer_tokens": 50_000}, max_frame_bytes=4096)
    client = await _stalled_client(url_of(server), subprotocol=JSON_SUBPROTOCOL)
    ready = await client.start()
    runtime = await _stall_mid_answer(server, client)
    client.ws.transport.write(HOSTILE[case][0])  # bytes of the test's own making
    # Its close frame waits behind the unread output; the connection is cut regardless.
    await wait_until(lambda: not server.connections, timeout=WAIT)
    assert runtime.transport is None
    assert server.sessions.get(ready["session_id"]) in (None, runtime)
    client.abort()


@BOTH
async def test_a_client_that_sends_pings_and_reads_no_pong_is_closed_at_the_bound(
    start_server: StartServer,
) -> None:
    # Each application ping queues a pong; a client that reads none of them must not
    # grow that queue without bound (the outbox bounds session events only).
    server = await start_server(
        max_messages_per_second=100_000.0,
        max_message_burst=100_000,
        socket_send_buffer=8192,
        slow_consumer_close_timeout=0.3,
    )
    client = await _stalled_client(url_of(server), subprotocol=JSON_SUBPROTOCOL)
    await client.start()
    client.ws.transport.pause_reading()
    (connection,) = server.connections
    try:
        for index in range(2 * MAX_QUEUED_CONTROL):
            await client.ws.send(json.dumps({"type": "ping", "id": f"p{index}"}))
    except ConnectionClosed:
        pass
    # Past the bound the worker closes (4000, unread here) and cuts TCP at the deadline.
    await wait_until(lambda: not server.connections, timeout=WAIT)
    assert connection._closing
    assert len(connection._control) <= MAX_QUEUED_CONTROL
    client.abort()
