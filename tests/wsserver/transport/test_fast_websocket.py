"""The fast send path's own pieces: its text-delta JSON and its frame headers."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import socket
import struct

import pytest
from websockets.asyncio.client import connect
from websockets.frames import Frame, Opcode
from websockets.streams import StreamReader

from protocol.encoding import JsonCodec
from protocol.events import TextDelta
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient, text_of, wait_until
from wsserver.transport.fast_websocket import FastConnection, encode_text_delta, frame_header
from wsserver.transport.websocket import Connection

# The tests that start a worker run on both send paths; the codec tests on neither.
pytestmark = pytest.mark.both_engines

# Every class of character JSON escapes differently: quotes, backslash, the short
# escapes, other control characters, DEL, non-ASCII, the line separators, astral.
AWKWARD = [
    "",
    " plain",
    'a "quoted" \\ back\\slash',
    "\b\f\n\r\t",
    "".join(chr(c) for c in range(0x20)),
    "\x7f\x80\xff",
    "héllo wörld ñ",
    "\u2028\u2029",
    "日本語のテキスト",
    "emoji 🎉 and 𝄞",
    "</script>",
]


def _delta(text: str, seq: int = 7, response_id: str = "resp_1") -> TextDelta:
    event = TextDelta(response_id, text, 1)
    event.seq = seq
    event.seal()
    return event


@pytest.mark.parametrize("text", AWKWARD)
def test_a_text_delta_is_byte_identical_to_the_json_codec(text: str) -> None:
    event = _delta(text, seq=12345, response_id='r"\\\n')
    assert encode_text_delta(event) == JsonCodec().encode_event(event).encode()  # type: ignore[union-attr]


def test_every_code_point_encodes_as_the_json_codec() -> None:
    codec = JsonCodec()
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(chars), 4096):
        event = _delta("".join(chars[start : start + 4096]))
        assert encode_text_delta(event) == codec.encode_event(event).encode()  # type: ignore[union-attr]


def test_a_lone_surrogate_raises_as_the_json_path_does() -> None:
    with pytest.raises(TypeError):
        encode_text_delta(_delta("bad \ud800 text"))


@pytest.mark.parametrize("length", [0, 1, 125, 126, 65535, 65536, 70_000])
@pytest.mark.parametrize("text", [True, False])
def test_a_frame_header_parses_as_the_frame_websockets_reads(length: int, text: bool) -> None:
    payload = bytes(length)
    reader = StreamReader()
    reader.feed_data(frame_header(length, text) + payload)
    parser = Frame.parse(reader.read_exact, mask=False)
    try:
        next(parser)
    except StopIteration as done:
        frame: Frame = done.value
    else:
        raise AssertionError("frame incomplete")
    assert frame.opcode is (Opcode.TEXT if text else Opcode.BINARY)
    assert frame.fin and not (frame.rsv1 or frame.rsv2 or frame.rsv3)
    assert bytes(frame.data) == payload


async def test_the_setting_picks_the_connection_class(start_server: StartServer) -> None:
    server = await start_server()
    client = await RawClient.connect(url_of(server))
    await client.start()
    (connection,) = server.connections
    fast = server.settings.ws_engine == "fast"
    assert type(connection) is (FastConnection if fast else Connection)
    await client.close()


async def test_a_response_streams_intact_under_permessage_deflate(
    start_server: StartServer,
) -> None:
    server = await start_server(compression=True, answer_tokens=300, decode_rate=1000.0)
    async with connect(url_of(server), compression="deflate") as ws:
        assert ws.protocol.extensions, "deflate negotiated"
        await ws.send(json.dumps({"type": "session.start"}))
        await ws.send(json.dumps({"type": "response.create", "input": "compress me"}))
        events = []
        while not events or events[-1]["type"] != "response.done":
            message = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if "seq" in message:
                events.append(message)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    (runtime,) = server.sessions.values()
    response = runtime.session.last_response
    assert response is not None
    assert text_of(events) == response.delivered_text()
    assert events[-1]["usage"]["output_tokens_delivered"] == 300


async def test_a_reset_while_the_socket_is_full_leaves_no_traceback(
    start_server: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start_server(
        decode_rate=1000.0, answer_tokens=5000, socket_send_buffer=8192, write_limit=4096
    )
    client = await RawClient.connect(url_of(server), rcvbuf=4096)
    await client.start()
    client.ws.transport.pause_reading()
    await client.send({"type": "response.create", "input": "fill the socket"})
    (connection,) = server.connections
    await wait_until(lambda: connection.ws.paused, timeout=10)
    sock = client.ws.transport.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.ws.transport.abort()  # a reset (RST), not a close
    await wait_until(lambda: not server.connections, timeout=10)
    gc.collect()  # a task whose exception nobody retrieved logs it when collected
    await asyncio.sleep(0)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
