"""Every malformed, out-of-order or oversize message gets a clear answer; nothing is lost."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from protocol.audio_frame import AudioFrame, AudioKind
from protocol.encoding import MSGPACK_SUBPROTOCOL
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient, dumps, wait_until

BEFORE_SESSION: list[tuple[str | bytes, str]] = [
    ("{not json", "invalid_json"),
    ('"just a string"', "invalid_field"),
    ('{"type": "input.text", "text": "hi"}', "no_session"),
    ('{"type": "response.interrupt"}', "no_session"),
    ('{"type": "teleport"}', "unknown_type"),
    ('{"no": "type"}', "missing_field"),
    ('{"type": "session.resume", "session_id": "s"}', "missing_field"),
    (b"\x81\xa4type\xa4ping", "invalid_frame"),  # binary frame under json encoding
]

IN_SESSION: list[tuple[Any, str]] = [
    ({"type": "response.interrupt"}, "no_active_response"),
    ({"type": "response.cancel"}, "no_active_response"),
    ({"type": "response.create"}, "nothing_to_answer"),
    ({"type": "session.start"}, "session_already_open"),
    (
        {"type": "session.resume", "session_id": "s", "resume_token": "t", "last_seq": 0},
        "session_already_open",
    ),
    ({"type": "input.text"}, "missing_field"),
    ({"type": "input.text", "text": 5}, "invalid_field"),
    ({"type": "input.text", "text": "x", "extra": True}, "unknown_field"),
    ({"type": "input.text", "text": "x" * 2001}, "input_too_long"),
    ({"type": "ack", "seq": 10_000}, "invalid_seq"),
    ({"type": "ack", "seq": -1}, "invalid_field"),
    ({"type": "response.create", "max_output_tokens": 0}, "invalid_field"),
    ({"type": "made.up", "id": "q1"}, "unknown_type"),
    ("[1, 2, 3]", "invalid_field"),
    ("{broken", "invalid_json"),
    (
        AudioFrame(AudioKind.INPUT, 1, 1, b"\x00\x00").encode(),
        "audio_not_enabled",
    ),  # a text-only session
]


async def test_bad_input_before_a_session(start_server: StartServer) -> None:
    server = await start_server()
    client = await RawClient.connect(url_of(server))
    for frame, code in BEFORE_SESSION:
        await client.send_raw(frame)
        error = await client.recv()
        assert (error["type"], error["code"]) == ("error", code), frame
        assert error["message"]
        assert "seq" not in error, "no session yet: errors are connection messages"
    # The connection still works.
    ready = await client.start()
    assert ready["session_id"]
    await client.close()


@pytest.mark.parametrize(("message", "code"), IN_SESSION)
async def test_bad_input_in_a_session(start_server: StartServer, message: Any, code: str) -> None:
    server = await start_server(max_input_chars=2000)
    client = await RawClient.connect(url_of(server))
    await client.start()
    if isinstance(message, dict):
        await client.send(message)
    else:
        await client.send_raw(message)
    error = await client.recv()
    assert (error["type"], error["code"]) == ("error", code)
    assert error["seq"] == 1, "in a session, errors are sequenced events"
    if isinstance(message, dict) and "id" in message:
        assert error["request_id"] == message["id"]
    # The session goes on: a full turn still works after the error.
    await client.send({"type": "response.create", "input": "still there?"})
    done = await client.until("response.done")
    assert done["status"] == "completed"
    await client.close()


async def test_interrupt_of_another_response_id(start_server: StartServer) -> None:
    server = await start_server(answer_tokens=1000, decode_rate=50)
    client = await RawClient.connect(url_of(server))
    await client.start()
    await client.send({"type": "response.create", "input": "q"})
    await client.until("response.created")
    await client.send({"type": "response.interrupt", "response_id": "resp_9"})
    error = await client.until("error")
    assert error["code"] == "no_active_response"
    await client.send({"type": "response.create", "input": "again"})
    assert (await client.until("error"))["code"] == "response_in_progress"
    await client.send({"type": "response.interrupt", "response_id": "resp_1"})
    assert (await client.until("response.done"))["status"] == "interrupted"
    await client.close()


async def test_msgpack_garbage_and_text_frames(start_server: StartServer) -> None:
    server = await start_server()
    client = await RawClient.connect(url_of(server), subprotocol=MSGPACK_SUBPROTOCOL)
    assert client.ws.subprotocol == MSGPACK_SUBPROTOCOL
    await client.send_raw(b"\xc1\xc1")
    assert (await client.recv())["code"] == "invalid_msgpack"
    await client.send_raw("text frame")
    assert (await client.recv())["code"] == "invalid_frame"
    await client.send_raw(msgpack.packb({"type": "ping", "id": "p"}))
    assert await client.recv() == {"type": "pong", "request_id": "p"}
    await client.close()


async def test_resume_refusals(start_server: StartServer) -> None:
    server = await start_server(replay_max_events=16, answer_tokens=40, decode_rate=1000)
    first = await RawClient.connect(url_of(server))
    ready = await first.start()
    await first.send({"type": "response.create", "input": "q"})
    done = await first.until("response.done")
    first.abort()
    session_id, token = ready["session_id"], ready["resume_token"]
    cases = [
        ({"session_id": "sess_nope", "resume_token": token, "last_seq": 0}, "unknown_session"),
        (
            {"session_id": session_id, "resume_token": "wrong", "last_seq": 0},
            "invalid_resume_token",
        ),
        ({"session_id": session_id, "resume_token": token, "last_seq": 0}, "replay_unavailable"),
        (
            {"session_id": session_id, "resume_token": token, "last_seq": done["seq"] + 5},
            "invalid_seq",
        ),
    ]
    for fields, code in cases:
        client = await RawClient.connect(url_of(server))
        await client.send({"type": "session.resume", **fields})
        error = await client.recv()
        assert (error["type"], error["code"]) == ("error", code)
        assert "seq" not in error
        await client.close()
    # A resume within the buffer still works after all those refusals.
    client = await RawClient.connect(url_of(server))
    await client.send(
        {
            "type": "session.resume",
            "session_id": session_id,
            "resume_token": token,
            "last_seq": done["seq"] - 1,
        }
    )
    assert (await client.recv())["type"] == "session.ready"
    assert (await client.recv())["seq"] == done["seq"]
    await client.close()


async def test_oversize_frame_closes_with_1009(start_server: StartServer) -> None:
    server = await start_server(max_frame_bytes=4096)
    client = await RawClient.connect(url_of(server))
    session_id = (await client.start())["session_id"]
    runtime = server.sessions[session_id]
    await client.send({"type": "response.create", "input": "long answer please"})
    await client.until("response.text.delta")
    await client.send({"type": "input.text", "text": "x" * 5000})
    assert await client.closed_code() == 1009
    # Terminal: nobody resumes, so the response stops now rather than after the grace period.
    await wait_until(lambda: runtime.closed)
    last = runtime.session.last_response
    assert last is not None
    assert (last.status, last.reason) == ("cancelled", "message_too_big")


async def test_no_handshake_closes_with_4001(start_server: StartServer) -> None:
    server = await start_server(handshake_timeout=0.3)
    client = await RawClient.connect(url_of(server))
    assert await client.closed_code() == 4001


async def test_newest_connection_wins_and_old_one_gets_4002(start_server: StartServer) -> None:
    server = await start_server()
    old = await RawClient.connect(url_of(server))
    ready = await old.start()
    new = await RawClient.connect(url_of(server))
    await new.resume(ready, 0)
    assert (await new.recv())["resumed"] is True
    assert await old.closed_code() == 4002
    await new.send({"type": "response.create", "input": "q"})
    assert (await new.until("response.done"))["status"] == "completed"
    await new.close()


async def test_flood_closes_with_4005_and_aborts_the_response(start_server: StartServer) -> None:
    server = await start_server(
        max_messages_per_second=20, max_message_burst=20, answer_tokens=10_000, decode_rate=50
    )
    client = await RawClient.connect(url_of(server))
    session_id = (await client.start())["session_id"]
    runtime = server.sessions[session_id]
    await client.send({"type": "response.create", "input": "q"})
    for i in range(100):
        await client.send({"type": "ping", "id": str(i)})
    assert await client.closed_code() == 4005
    await wait_until(lambda: server.engine.stats()["running"] == 0)
    last = runtime.session.last_response
    assert last is not None
    assert (last.status, last.reason) == ("cancelled", "flood")
    assert session_id not in server.sessions, "a terminal close ends the session"


async def test_bursts_under_the_limit_are_fine(start_server: StartServer) -> None:
    server = await start_server(max_messages_per_second=20, max_message_burst=50)
    client = await RawClient.connect(url_of(server))
    await client.start()
    for i in range(40):
        await client.send({"type": "ping", "id": str(i)})
    pongs = [await client.until("pong") for _ in range(40)]
    assert [p["request_id"] for p in pongs] == [str(i) for i in range(40)]
    await client.close()


# -- hostile input at decode: nesting, invalid text, values that are not JSON data ----------


def _no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    tracebacks = [r.getMessage() for r in caplog.records if r.exc_info is not None]
    assert not tracebacks, tracebacks


async def _turn_completes(client: RawClient) -> None:
    await client.send({"type": "response.create", "input": "still there?"})
    assert (await client.until("response.done"))["status"] == "completed"


async def test_deep_nesting_is_invalid_json_and_the_session_goes_on(
    start_server: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start_server()
    client = await RawClient.connect(url_of(server))
    await client.start()
    deep_schema: dict[str, Any] = {"type": "object"}
    for _ in range(150):
        deep_schema = {"type": "object", "properties": {"a": deep_schema}}
    frames = [
        "[" * 1000,
        "[" * 100_000,
        '{"type":"ping","id":"deep","pad":' + "[" * 200 + "]" * 200 + "}",
        dumps({"type": "session.update", "tools": [{"name": "t", "parameters": deep_schema}]}),
    ]
    for frame in frames:
        await client.send_raw(frame)
        error = await client.until("error")
        assert error["code"] == "invalid_json", frame[:80]
        assert "nest" in error["message"]
        assert "request_id" not in error, "nothing of an undecodable frame is echoed"
    await _turn_completes(client)
    await client.close()
    _no_tracebacks(caplog)


async def test_deep_nesting_is_invalid_msgpack(
    start_server: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start_server()
    client = await RawClient.connect(url_of(server), subprotocol=MSGPACK_SUBPROTOCOL)
    await client.start()
    nested: Any = None
    for _ in range(200):
        nested = [nested]
    for frame in (
        msgpack.packb({"type": "tool.result", "call_id": "c", "output": nested}),
        b"\x81\xa3pad" + b"\x91" * 5000 + b"\xc0",  # deeper than the packer itself would go
    ):
        await client.send_raw(frame)
        error = await client.until("error")
        assert error["code"] == "invalid_msgpack"
        assert "nest" in error["message"]
    await _turn_completes(client)
    await client.close()
    _no_tracebacks(caplog)


async def test_a_lone_surrogate_is_refused_and_replay_stays_intact(
    start_server: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start_server(answer_tokens=5)
    client = await RawClient.connect(url_of(server))
    ready = await client.start()
    await _turn_completes(client)
    for frame in (
        '{"type":"ping","id":"\\ud800"}',
        '{"type":"input.text","text":"a\\udfff b"}',
        '{"type":"tool.result","call_id":"c","output":{"\\ud83d":1}}',  # a lone high half, a key
    ):
        await client.send_raw(frame)
        error = await client.until("error")
        assert error["code"] == "invalid_json"
        assert "surrogate" in error["message"]
        assert "request_id" not in error
    # A well-formed pair is fine.
    await client.send_raw('{"type":"ping","id":"\\ud83d\\ude00"}')
    assert (await client.until("pong"))["request_id"] == "\U0001f600"
    await _turn_completes(client)
    seen = [m["seq"] for m in client.seen if "seq" in m]
    client.abort()
    # Every event (the errors included) replays under both encodings, and the session goes on.
    for subprotocol in (None, MSGPACK_SUBPROTOCOL):
        again = await RawClient.connect(url_of(server), subprotocol=subprotocol)
        await again.resume(ready, 0)
        assert (await again.recv())["type"] == "session.ready"
        replayed = [(await again.recv())["seq"] for _ in seen]
        assert replayed == seen
        await _turn_completes(again)
        seen = [m["seq"] for m in again.seen if "seq" in m]
        again.abort()
    _no_tracebacks(caplog)


NOT_JSON_DATA: list[tuple[Any, str]] = [
    (b"raw bytes", "output"),
    ({"blob": b"\x00\x01"}, "output.blob"),
    (msgpack.ExtType(5, b"x"), "output"),
    ([1, msgpack.Timestamp(1, 0)], "output.1"),
    ({b"key": 1}, "output"),
    (float("nan"), "output"),
    (float("inf"), "output"),
]


@pytest.mark.parametrize(("output", "where"), NOT_JSON_DATA)
async def test_msgpack_values_that_are_not_json_data_are_invalid_fields(
    start_server: StartServer, caplog: pytest.LogCaptureFixture, output: Any, where: str
) -> None:
    server = await start_server()
    client = await RawClient.connect(url_of(server), subprotocol=MSGPACK_SUBPROTOCOL)
    await client.start()
    frame = msgpack.packb(
        {"type": "tool.result", "call_id": "call_any", "output": output, "id": "t1"},
        use_bin_type=True,
    )
    await client.send_raw(frame)
    error = await client.until("error")
    assert error["code"] == "invalid_field"
    assert f"'{where}'" in error["message"]
    assert error["request_id"] == "t1"
    # Other messages carrying free-form values are checked the same way.
    tools = [{"name": "t", "parameters": {"type": "object", "default": b"x"}}]
    await client.send_raw(msgpack.packb({"type": "session.update", "tools": tools}))
    error = await client.until("error")
    assert error["code"] == "invalid_field"
    assert "'tools.0.parameters.default'" in error["message"]
    await _turn_completes(client)
    await client.close()
    _no_tracebacks(caplog)
