"""The fast send path's own pieces: its text-delta JSON and its frame headers."""

from __future__ import annotations

import pytest
from websockets.frames import Frame, Opcode
from websockets.streams import StreamReader

from protocol.encoding import JsonCodec
from protocol.events import TextDelta
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient
from wsserver.transport.fast_websocket import FastConnection, encode_text_delta, frame_header
from wsserver.transport.websocket import Connection

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
