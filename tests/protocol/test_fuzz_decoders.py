"""Fuzz every decoder: arbitrary text and bytes, arbitrary values, audio frames.

Property (``decode_and_parse``): decoding and parsing a frame returns a valid
message whose fields re-encode under both codecs, or raises ``ProtocolViolation``
with a documented decode code; never any other exception.
"""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.audio_frame import (
    HEADER_SIZE,
    AudioFrame,
    AudioKind,
    audio_event_from_frame,
    decode_audio_frame,
    is_audio_frame,
)
from protocol.codes import ErrorCode
from protocol.encoding import JsonCodec, MsgpackCodec
from protocol.errors import ProtocolViolation
from protocol.json_value import MAX_DEPTH
from tests.protocol.fuzz_inputs import (
    decode_and_parse,
    json_frame,
    json_values,
    msgpack_values,
    nested,
)

FUZZ = settings(max_examples=400, deadline=None)

JSON = JsonCodec()
MSGPACK = MsgpackCodec()

JSON_TOKENS = [
    *'[]{}",: ',
    *["0", "-1", "1.5", "1e400", "-1e999", "18446744073709551616", "NaN", "Infinity"],
    *["true", "null", "\\ud800", "\\udc00", "\\ud83d\\ude00", "\\\\", "\\n", "é"],
    *['"type"', '"id"', '"ping"', '"ack"', '"seq"', '"tool.result"', '"call_id"', '"output"'],
]
json_ish = st.lists(st.sampled_from(JSON_TOKENS), max_size=40).map("".join)
"""Text made of JSON's own tokens, so the parser gets past the first byte."""


@FUZZ
@given(st.text(max_size=200) | json_ish)
def test_json_decoder_on_any_text(frame: str) -> None:
    decode_and_parse(JSON, frame)


@FUZZ
@given(json_values)
def test_json_decoder_on_any_value(value: Any) -> None:
    decode_and_parse(JSON, json_frame(value))
    decode_and_parse(JSON, json_frame({"type": "ping", "id": "p", "pad": value}))
    decode_and_parse(JSON, json_frame({"type": "tool.result", "call_id": "c", "output": value}))


@FUZZ
@given(st.binary(max_size=200))
def test_msgpack_decoder_on_any_bytes(frame: bytes) -> None:
    decode_and_parse(MSGPACK, frame)


@FUZZ
@given(msgpack_values)
def test_msgpack_decoder_on_any_value(value: Any) -> None:
    decode_and_parse(MSGPACK, msgpack.packb(value, use_bin_type=True))
    message = {"type": "tool.result", "call_id": "c", "output": value}
    decode_and_parse(MSGPACK, msgpack.packb(message, use_bin_type=True))


@FUZZ
@given(st.text(max_size=40), st.binary(max_size=40))
def test_wrong_frame_kinds(text: str, data: bytes) -> None:
    for codec, frame in ((JSON, data), (MSGPACK, text)):
        with pytest.raises(ProtocolViolation) as info:
            codec.decode(frame)
        assert info.value.code is ErrorCode.INVALID_FRAME


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3000), st.sampled_from(["[", "{", '{"a":[']))
def test_any_nesting_depth(depth: int, opener: str) -> None:
    # Unclosed, closed, and built from values: nothing past MAX_DEPTH is ever accepted.
    closer = {"[": "]", "{": "}", '{"a":[': "]}"}[opener]
    assert decode_and_parse(JSON, opener * depth) is None
    closed = opener * depth + ("0" if opener == "[" else "") + closer * depth
    decode_and_parse(JSON, closed)
    value = {"type": "tool.result", "call_id": "c", "output": nested(min(depth, 500))}
    accepted = decode_and_parse(MSGPACK, msgpack.packb(value))
    assert (accepted is not None) == (min(depth, 500) < MAX_DEPTH)


# -- audio frames -------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=64))
def test_audio_decoder_on_any_bytes(frame: bytes) -> None:
    try:
        decoded = decode_audio_frame(frame)
    except ProtocolViolation as violation:
        assert violation.code is ErrorCode.INVALID_FRAME
        return
    assert decoded.encode() == frame
    if decoded.kind is AudioKind.OUTPUT:
        assert audio_event_from_frame(frame)["audio"] == decoded.payload


@FUZZ
@given(
    st.sampled_from(AudioKind),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**64 - 1),
    st.binary(max_size=64).map(lambda b: b[: len(b) // 2 * 2]),
    st.booleans(),
)
def test_audio_frames_round_trip(
    kind: AudioKind, stream_id: int, seq: int, payload: bytes, last: bool
) -> None:
    frame = AudioFrame(kind, stream_id, seq, payload, last)
    raw = frame.encode()
    assert len(raw) == HEADER_SIZE + len(payload)
    assert is_audio_frame(raw)
    assert decode_audio_frame(raw) == frame


@FUZZ
@given(msgpack_values)
def test_no_msgpack_message_looks_like_audio(value: Any) -> None:
    if isinstance(value, dict):
        assert not is_audio_frame(msgpack.packb(value, use_bin_type=True))
