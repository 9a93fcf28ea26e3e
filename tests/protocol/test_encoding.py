from __future__ import annotations

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
