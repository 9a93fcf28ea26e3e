"""Hostile client input for the fuzz tests: values, valid messages and their mutations.

The property every decoder and ``parse_client_message`` must hold is in
:func:`decode_and_parse`: a frame either becomes a valid message whose fields
re-encode under both codecs, or a :class:`ProtocolViolation` with one of the
documented decode codes whose ``error`` event encodes too. Nothing else escapes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any, Literal

import msgpack
from hypothesis import strategies as st
from pydantic import BaseModel

from protocol.codes import ERROR_CODES, ErrorCode
from protocol.encoding import JsonCodec, MsgpackCodec
from protocol.errors import ProtocolViolation
from protocol.events import MAX_ERROR_MESSAGE, error_fields
from protocol.messages import parse_client_message

CODECS = (JsonCodec(), MsgpackCodec())

DECODE_CODES = frozenset(
    {
        ErrorCode.INVALID_JSON,
        ErrorCode.INVALID_MSGPACK,
        ErrorCode.INVALID_FRAME,
        ErrorCode.UNKNOWN_TYPE,
        ErrorCode.MISSING_FIELD,
        ErrorCode.INVALID_FIELD,
        ErrorCode.UNKNOWN_FIELD,
    }
)
"""The codes decoding and parsing may answer with (see docs/PROTOCOL.md, error codes)."""

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "array", "items": {}}},
    "required": ["city"],
}
TOOL = {"name": "get_weather", "description": "weather by city", "parameters": SCHEMA}

VALID: list[dict[str, Any]] = [
    {
        "type": "session.start",
        "id": "s1",
        "instructions": "be brief",
        "settings": {"max_output_tokens": 100, "tool_timeout_ms": 1000},
        "audio": {
            "sample_rate": 24000,
            "output": False,
            "turn_detection": {"type": "manual", "threshold": 0.25, "false_interruption_ms": 300},
        },
        "tools": [TOOL],
    },
    {"type": "session.resume", "session_id": "sess_1", "resume_token": "tok", "last_seq": 3},
    {"type": "session.update", "tools": [TOOL, {"name": "noop"}], "id": "u1"},
    {"type": "input.text", "text": "héllo 🙂"},
    {
        "type": "response.create",
        "input": "q",
        "max_output_tokens": 10,
        "response_format": {"type": "json_schema", "schema": SCHEMA, "name": "w"},
    },
    {"type": "response.continue", "response_id": "resp_1", "max_output_tokens": 5},
    {"type": "response.interrupt", "response_id": "resp_1", "rendered_chars": 4, "played_ms": 9},
    {"type": "response.cancel", "response_id": "resp_2"},
    {"type": "input_audio.commit"},
    {"type": "input_audio.clear", "id": "c"},
    {"type": "output_audio.played", "response_id": "resp_1", "played_ms": 120},
    {
        "type": "tool.result",
        "call_id": "call_1",
        "output": {"temp_c": 18.5, "sky": ["cloudy", None, True, -3]},
    },
    {"type": "tool.result", "call_id": "call_2", "error": "no network"},
    {"type": "ack", "seq": 7},
    {"type": "ping", "id": "p"},
]

FIELD_NAMES = sorted({key for message in VALID for key in message} | {"output", "schema"})

any_text = st.text(
    st.characters(codec=None, exclude_categories=())
    | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    max_size=12,
)
"""Any Python string, lone surrogates included (JSON can carry them as \\u escapes)."""

utf8_text = st.text(max_size=12)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()
    | any_text
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=16,
)
"""What ``json.loads`` can return, with the values that are not JSON data mixed in."""

msgpack_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | utf8_text
    | st.binary(max_size=6)
    | st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=4))
    | st.builds(msgpack.Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 999_999_999))
)
msgpack_keys = utf8_text | st.binary(max_size=4) | st.integers(-5, 5)
msgpack_values = st.recursive(
    msgpack_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(msgpack_keys, inner, max_size=4)
    ),
    max_leaves=16,
)
"""Everything msgpack can pack: bin, ext, timestamps, non-string keys, tuples."""


def nested(depth: int, leaf: Any = 0) -> Any:
    """``leaf`` inside ``depth`` alternating arrays and objects."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def value_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``value``: its fields, their items, down to the leaves."""
    paths = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            paths += value_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            paths += value_paths(item, (*prefix, index))
    return paths


def values_like(old: Any, packable: bool) -> st.SearchStrategy[Any]:
    """Values of the same kind as ``old``: they get past type checks to the bounds.

    ``packable``: only what msgpack can carry (UTF-8 text, 64-bit integers).
    """
    if isinstance(old, str):
        return utf8_text if packable else any_text
    if isinstance(old, bool):
        return st.booleans()
    if isinstance(old, int):
        if packable:
            return st.integers(min_value=-(2**63), max_value=2**64 - 1)
        return st.integers(min_value=-(2**70), max_value=2**70)
    if isinstance(old, float):
        return st.floats()
    return st.nothing()


def field_names(bases: Sequence[dict[str, Any]]) -> list[str]:
    """Every field name used at any depth in ``bases``: the names an added field takes."""
    return sorted(
        {p[-1] for base in bases for p in value_paths(base) if p and isinstance(p[-1], str)}
    )


@st.composite
def mutated_messages(
    draw: st.DrawFn,
    encoding: Literal["json", "msgpack"],
    bases: Sequence[dict[str, Any]] = VALID,
) -> dict[Any, Any]:
    """A message of ``bases`` (valid ones of any type) with one to three edits at any depth.

    An edit replaces a field or item (with a value of the same kind, an arbitrary
    value, or one nested past the limit), removes it, or adds a field beside it.
    New values are what ``encoding`` can carry, JSON data or not.
    """
    packable = encoding == "msgpack"
    values = msgpack_values if packable else json_values
    keys = msgpack_keys if packable else any_text
    names = FIELD_NAMES if bases is VALID else field_names(bases)
    message: dict[Any, Any] = copy.deepcopy(draw(st.sampled_from(list(bases))))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(value_paths(message)))
        if not path:
            message[draw(st.sampled_from(names) | keys)] = draw(values)
            continue
        parent: Any = message
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "replace":
            deep = st.integers(60, 70).map(nested)
            parent[last] = draw(values_like(parent[last], packable) | values | deep)
        elif action == "delete":
            del parent[last]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(names) | keys)] = draw(values)
        else:
            parent.append(draw(values))
    return message


def json_frame(value: Any) -> str:
    """``value`` as a JSON text frame: raw UTF-8 where it can be, \\u escapes where not."""
    frame = json.dumps(value, ensure_ascii=False)
    try:
        frame.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate: a WebSocket text frame can carry it only as an escape.
        frame = json.dumps(value)
    return frame


def decode_and_parse(codec: JsonCodec | MsgpackCodec, frame: str | bytes) -> BaseModel | None:
    """The property: a valid, re-encodable message, or a documented violation."""
    try:
        message = parse_client_message(codec.decode(frame))
    except ProtocolViolation as violation:
        assert violation.code in DECODE_CODES, violation.code
        assert violation.code.value in ERROR_CODES
        fields = error_fields(
            violation.code.value, violation.message, violation.request_id, violation.details
        )
        assert len(fields["message"]) <= MAX_ERROR_MESSAGE
        for other in CODECS:
            encoded = other.encode(fields)
            if isinstance(encoded, str):
                encoded.encode("utf-8")  # a WebSocket text frame must be valid UTF-8
        return None
    dumped = message.model_dump(by_alias=True)
    for other in CODECS:
        encoded = other.encode(dumped)
        if isinstance(encoded, str):
            encoded.encode("utf-8")
        assert parse_client_message(other.decode(encoded)) == message
    return message
