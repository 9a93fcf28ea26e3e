"""Fuzz ``parse_client_message`` for every message type under both encodings.

Valid messages of each type are mutated (fields set to arbitrary values, added,
removed, at any depth) and encoded as JSON text or msgpack, whole or with bytes
flipped. Property (``decode_and_parse``): a valid message whose fields re-encode
under both codecs, or a ``ProtocolViolation`` with a documented decode code.
"""

from __future__ import annotations

from typing import Any

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.encoding import JsonCodec, MsgpackCodec
from protocol.messages import CLIENT_MESSAGE_TYPES
from tests.protocol.fuzz_inputs import (
    VALID,
    decode_and_parse,
    json_frame,
    mutated_messages,
)

FUZZ = settings(max_examples=400, deadline=None)

JSON = JsonCodec()
MSGPACK = MsgpackCodec()


def test_the_valid_messages_cover_every_type_and_parse() -> None:
    assert {m["type"] for m in VALID} == CLIENT_MESSAGE_TYPES
    for message in VALID:
        assert decode_and_parse(JSON, json_frame(message)) is not None, message
        assert decode_and_parse(MSGPACK, MSGPACK.encode(message)) is not None, message


@FUZZ
@given(mutated_messages("json"))
def test_mutated_messages_as_json(message: dict[Any, Any]) -> None:
    decode_and_parse(JSON, json_frame(message))


@FUZZ
@given(mutated_messages("msgpack"))
def test_mutated_messages_as_msgpack(message: dict[Any, Any]) -> None:
    decode_and_parse(MSGPACK, msgpack.packb(message, use_bin_type=True))


edits = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255), st.booleans()), max_size=4)


def _edit(frame: bytes, changes: list[tuple[int, int, bool]]) -> bytes:
    data = bytearray(frame)
    for position, byte, insert in changes:
        at = position % (len(data) + 1)
        if insert or at == len(data):
            data.insert(at, byte)
        else:
            data[at] = byte
    return bytes(data)


@FUZZ
@given(st.sampled_from(VALID), edits)
def test_valid_messages_with_bytes_changed(
    message: dict[str, Any], changes: list[tuple[int, int, bool]]
) -> None:
    decode_and_parse(MSGPACK, _edit(MSGPACK.encode(message), changes))
    text = _edit(json_frame(message).encode(), changes).decode("utf-8", "replace")
    decode_and_parse(JSON, text)
