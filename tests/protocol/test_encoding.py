from __future__ import annotations

import json

import msgpack
import pytest

from protocol.audio_frame import (
    HEADER_SIZE,
    AudioFrame,
    AudioKind,
    decode_audio_frame,
    is_audio_frame,
)
from protocol.codes import ErrorCode
from protocol.encoding import (
    JSON_SUBPROTOCOL,
    MSGPACK_SUBPROTOCOL,
    JsonCodec,
    MsgpackCodec,
    codec_for,
)
from protocol.errors import ProtocolViolation
from protocol.events import Event, TextDelta
from protocol.json_value import MAX_DEPTH

MESSAGE = {"type": "response.text.delta", "seq": 7, "response_id": "resp_1", "delta": " héllo"}


@pytest.mark.parametrize("codec", [JsonCodec(), MsgpackCodec()])
def test_round_trip(codec: JsonCodec | MsgpackCodec) -> None:
    assert codec.decode(codec.encode(MESSAGE)) == MESSAGE


def test_negotiation() -> None:
    assert codec_for(MSGPACK_SUBPROTOCOL).subprotocol == MSGPACK_SUBPROTOCOL
    assert codec_for(JSON_SUBPROTOCOL).subprotocol == JSON_SUBPROTOCOL
    assert codec_for(None).subprotocol == JSON_SUBPROTOCOL


@pytest.mark.parametrize(
    ("codec", "frame", "code"),
    [
        (JsonCodec(), "{nope", ErrorCode.INVALID_JSON),
        (JsonCodec(), b"\x81\xa1a\x01", ErrorCode.INVALID_FRAME),
        (MsgpackCodec(), "text", ErrorCode.INVALID_FRAME),
        (MsgpackCodec(), b"\xc1", ErrorCode.INVALID_MSGPACK),
        (MsgpackCodec(), b"\x81", ErrorCode.INVALID_MSGPACK),
    ],
)
def test_bad_frames(codec: JsonCodec | MsgpackCodec, frame: str | bytes, code: ErrorCode) -> None:
    with pytest.raises(ProtocolViolation) as info:
        codec.decode(frame)
    assert info.value.code is code


def test_audio_frame_round_trip() -> None:
    pcm = bytes(range(200))
    frame = AudioFrame(AudioKind.OUTPUT, stream_id=3, seq=2**40, payload=pcm, last=True)
    raw = frame.encode()
    assert len(raw) == HEADER_SIZE + len(pcm)
    assert is_audio_frame(raw)
    assert decode_audio_frame(raw) == frame


def test_audio_frames_never_look_like_msgpack_maps() -> None:
    for size in (0, 1, 15, 16, 17, 65536):
        packed = msgpack.packb({str(i): i for i in range(size % 40)})
        assert not is_audio_frame(packed)


@pytest.mark.parametrize(
    "raw",
    [
        b"\x01\x00",  # shorter than the header
        AudioFrame(AudioKind.INPUT, 1, 1, b"\x00\x00\x00").encode(),  # odd payload
        b"\x01\x02" + bytes(14),  # unknown flag
        b"\x01\x00\x01\x00" + bytes(12),  # reserved bits
        b"\x07" + bytes(15),  # unknown kind
    ],
)
def test_bad_audio_frames(raw: bytes) -> None:
    with pytest.raises(ProtocolViolation) as info:
        decode_audio_frame(raw)
    assert info.value.code is ErrorCode.INVALID_FRAME


@pytest.mark.parametrize("codec", [JsonCodec(), MsgpackCodec()])
@pytest.mark.parametrize(
    "text", ["plain", ' quote " and \\ backslash', "emoji 🙂 and\nnewline", ""]
)
def test_event_fast_path_equals_the_generic_encoding(
    codec: JsonCodec | MsgpackCodec, text: str
) -> None:
    delta = TextDelta('resp_"1', text, 1)
    delta.seal()
    delta.seq = 42
    assert codec.decode(codec.encode_event(delta)) == delta.to_message()
    done = Event("response.done", {"response_id": "resp_1", "status": "completed"})
    done.seq = 43
    assert codec.decode(codec.encode_event(done)) == done.to_message()


# -- hostile input at decode ------------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [
        "[" * 65 + "]" * 65,  # one level past the limit
        "[" * 1000,
        "[" * 100_000,
        '{"a":' * 70 + "1" + "}" * 70,
        '{"pad":"' + "[" * 200 + '","deep":' + "[" * 65 + "]" * 65 + "}",
    ],
)
def test_json_nested_past_the_limit_is_invalid_json(frame: str) -> None:
    with pytest.raises(ProtocolViolation) as info:
        JsonCodec().decode(frame)
    assert info.value.code is ErrorCode.INVALID_JSON
    assert f"deeper than {MAX_DEPTH}" in info.value.message


def test_json_at_the_limit_and_brackets_in_strings_are_fine() -> None:
    codec = JsonCodec()
    at_limit = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert codec.decode(at_limit) == json.loads(at_limit)
    text = '{"text":"' + "[{" * 500 + '\\"[[[","n":[[1]]}'
    assert codec.decode(text) == json.loads(text)


def test_msgpack_nested_past_the_limit_is_invalid_msgpack() -> None:
    codec = MsgpackCodec()
    assert codec.decode(b"\x91" * (MAX_DEPTH - 1) + b"\x80") is not None
    for frame in (b"\x91" * MAX_DEPTH + b"\x80", b"\x91" * 100_000 + b"\xc0"):
        with pytest.raises(ProtocolViolation) as info:
            codec.decode(frame)
        assert info.value.code is ErrorCode.INVALID_MSGPACK
        assert "deeper" in info.value.message


@pytest.mark.parametrize(
    "frame",
    [
        '{"type":"ping","id":"\\ud800"}',
        '{"type":"ping","id":"\\uDFFF x"}',
        '{"type":"ping","\\udc00":1}',
        '{"type":"ping","x":["ok",{"k":"\\ud83d"}]}',
        '{"type":"ping","x":"\\ude00\\ud83d"}',  # a pair in the wrong order
    ],
)
def test_json_lone_surrogates_are_invalid_json(frame: str) -> None:
    with pytest.raises(ProtocolViolation) as info:
        JsonCodec().decode(frame)
    assert info.value.code is ErrorCode.INVALID_JSON
    assert "surrogate" in info.value.message


def test_json_surrogate_pairs_and_escaped_backslashes_are_fine() -> None:
    codec = JsonCodec()
    assert codec.decode('{"a":"\\ud83d\\ude00"}') == {"a": "\U0001f600"}
    assert codec.decode('{"a":"\\\\ud800"}') == {"a": "\\ud800"}


@pytest.mark.parametrize("frame", ["NaN", '{"x":Infinity}', '{"x":-Infinity}', "1" * 5000])
def test_json_non_numbers_are_invalid_json(frame: str) -> None:
    with pytest.raises(ProtocolViolation) as info:
        JsonCodec().decode(frame)
    assert info.value.code is ErrorCode.INVALID_JSON


@pytest.mark.parametrize("text", [b"\xed\xa0\x80", b"\xff", b"ab\xc3"])
def test_msgpack_invalid_utf8_is_invalid_msgpack(text: bytes) -> None:
    as_value = b"\x81\xa4type" + bytes([0xA0 | len(text)]) + text
    as_key = b"\x81" + bytes([0xA0 | len(text)]) + text + b"\x01"
    for frame in (as_value, as_key):
        with pytest.raises(ProtocolViolation) as info:
            MsgpackCodec().decode(frame)
        assert info.value.code is ErrorCode.INVALID_MSGPACK


def test_json_unterminated_strings_with_brackets_are_invalid_json() -> None:
    # Escaped quotes and brackets, never closed: invalid, whatever the bracket count says.
    frame = '["' + '\\"[' * 200_000
    with pytest.raises(ProtocolViolation):
        JsonCodec().decode(frame)
