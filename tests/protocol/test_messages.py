from __future__ import annotations

from typing import Any

import pytest

from protocol.codes import ERROR_CODES, ErrorCode
from protocol.encoding import JsonCodec, MsgpackCodec
from protocol.errors import ProtocolViolation
from protocol.events import MAX_ERROR_MESSAGE, error_fields
from protocol.json_value import MAX_DEPTH, MAX_VALUES
from protocol.messages import (
    Ack,
    ResponseCreate,
    ResponseInterrupt,
    SessionResume,
    SessionStart,
    parse_client_message,
)


def test_parses_each_type() -> None:
    assert isinstance(parse_client_message({"type": "session.start"}), SessionStart)
    resume = parse_client_message(
        {"type": "session.resume", "session_id": "s", "resume_token": "t", "last_seq": 4}
    )
    assert isinstance(resume, SessionResume)
    assert resume.last_seq == 4
    create = parse_client_message({"type": "response.create", "input": "hi", "id": "r1"})
    assert isinstance(create, ResponseCreate)
    assert create.id == "r1"
    interrupt = parse_client_message({"type": "response.interrupt", "rendered_chars": 3})
    assert isinstance(interrupt, ResponseInterrupt)
    assert interrupt.rendered_chars == 3
    assert isinstance(parse_client_message({"type": "ack", "seq": 0}), Ack)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ([1, 2], ErrorCode.INVALID_FIELD),
        ({}, ErrorCode.MISSING_FIELD),
        ({"type": "nope"}, ErrorCode.UNKNOWN_TYPE),
        ({"type": 7}, ErrorCode.UNKNOWN_TYPE),
        ({"type": "session.resume", "session_id": "s", "last_seq": 1}, ErrorCode.MISSING_FIELD),
        ({"type": "ack", "seq": -1}, ErrorCode.INVALID_FIELD),
        ({"type": "ack", "seq": "3"}, ErrorCode.INVALID_FIELD),
        ({"type": "ack", "seq": 1.5}, ErrorCode.INVALID_FIELD),
        ({"type": "ack", "seq": True}, ErrorCode.INVALID_FIELD),
        ({"type": "input.text", "text": ""}, ErrorCode.INVALID_FIELD),
        ({"type": "input.text", "text": "x", "colour": 1}, ErrorCode.UNKNOWN_FIELD),
        ({"type": "response.create", "max_output_tokens": 0}, ErrorCode.INVALID_FIELD),
        ({"type": "response.interrupt", "rendered_chars": -2}, ErrorCode.INVALID_FIELD),
        ({"type": "session.start", "settings": {"speed": 1}}, ErrorCode.UNKNOWN_FIELD),
        ({"type": "ping", "id": "x" * 500}, ErrorCode.INVALID_FIELD),
    ],
)
def test_validation_failures_map_to_codes(message: Any, code: ErrorCode) -> None:
    with pytest.raises(ProtocolViolation) as info:
        parse_client_message(message)
    assert info.value.code is code
    assert info.value.message


def test_violation_echoes_request_id() -> None:
    with pytest.raises(ProtocolViolation) as info:
        parse_client_message({"type": "ack", "id": "req-9"})
    assert info.value.request_id == "req-9"
    assert "seq" in info.value.message


# -- every field is JSON data -------------------------------------------------------------

TOOL = {"name": "t", "parameters": {"type": "object"}}


@pytest.mark.parametrize(
    ("message", "where", "reason"),
    [
        ({"type": "tool.result", "call_id": "c", "output": b"x"}, "output", "bytes"),
        (
            {"type": "tool.result", "call_id": "c", "output": {"a": [1, {"b": b""}]}},
            "output.a.1.b",
            "bytes",
        ),
        ({"type": "tool.result", "call_id": "c", "output": {1: "x"}}, "output", "key"),
        ({"type": "tool.result", "call_id": "c", "output": {b"k": "x"}}, "output", "key"),
        ({"type": "tool.result", "call_id": "c", "output": (1, 2)}, "output", "tuple"),
        ({"type": "tool.result", "call_id": "c", "output": float("nan")}, "output", "finite"),
        ({"type": "tool.result", "call_id": "c", "output": [float("-inf")]}, "output.0", "finite"),
        ({"type": "tool.result", "call_id": "c", "output": 2**64}, "output", "range"),
        ({"type": "tool.result", "call_id": "c", "output": -(2**63) - 1}, "output", "range"),
        ({"type": "tool.result", "call_id": "c", "output": "\ud800"}, "output", "surrogate"),
        ({"type": "tool.result", "call_id": "c", "output": {"\udc00": 1}}, "output", "surrogate"),
        ({"type": "tool.result", "call_id": "c", "output": {1, 2}}, "output", "set"),
        (
            {"type": "session.start", "tools": [{**TOOL, "parameters": {"x": b""}}]},
            "tools.0.parameters.x",
            "bytes",
        ),
        (
            {"type": "session.update", "tools": [TOOL, {**TOOL, "description": b"d"}]},
            "tools.1.description",
            "bytes",
        ),
        (
            {
                "type": "response.create",
                "response_format": {"type": "json_schema", "schema": {"maximum": float("inf")}},
            },
            "response_format.schema.maximum",
            "finite",
        ),
        ({"type": "input.text", "text": "hi", "extra": b"x"}, "extra", "bytes"),
        ({"type": "ack", "seq": 2**70}, "seq", "range"),
        ({"type": "ping", b"id": "x"}, "message", "key"),
    ],
)
def test_values_that_are_not_json_data_are_invalid_fields(
    message: dict[Any, Any], where: str, reason: str
) -> None:
    message = {**message, "id": "r1"}
    with pytest.raises(ProtocolViolation) as info:
        parse_client_message(message)
    assert info.value.code is ErrorCode.INVALID_FIELD
    assert f"invalid field '{where}'" in info.value.message
    assert reason in info.value.message
    assert info.value.request_id == "r1"


def test_nesting_past_the_limit_is_an_invalid_field() -> None:
    output: Any = 1
    for _ in range(MAX_DEPTH):
        output = [output]
    with pytest.raises(ProtocolViolation) as info:
        parse_client_message({"type": "tool.result", "call_id": "c", "output": output})
    assert info.value.code is ErrorCode.INVALID_FIELD
    assert "deeper" in info.value.message
    # One level less (the message object is level 1) is accepted.
    parse_client_message({"type": "tool.result", "call_id": "c", "output": output[0]})


def test_too_many_values_is_an_invalid_field() -> None:
    with pytest.raises(ProtocolViolation) as info:
        parse_client_message({"type": "tool.result", "call_id": "c", "output": [0] * MAX_VALUES})
    assert info.value.code is ErrorCode.INVALID_FIELD
    assert f"more than {MAX_VALUES}" in info.value.message


def test_nothing_unchecked_is_echoed() -> None:
    for bad_id in ("\ud800", "ok\udfff", "x" * 129, 5):
        with pytest.raises(ProtocolViolation) as info:
            parse_client_message({"type": "ack", "id": bad_id})
        assert info.value.request_id is None
    with pytest.raises(ProtocolViolation) as info:
        parse_client_message({"type": "ping", "k" * 10_000: 1})
    assert info.value.code is ErrorCode.UNKNOWN_FIELD
    assert len(info.value.message) < 100
    with pytest.raises(ProtocolViolation) as info:
        parse_client_message({"type": "x" * 10_000 + "\ud800"})
    assert info.value.code is ErrorCode.UNKNOWN_TYPE
    assert len(info.value.message) < 100
    with pytest.raises(ProtocolViolation) as info:
        parse_client_message({"type": ["session.start"] * 10_000})
    assert info.value.code is ErrorCode.UNKNOWN_TYPE
    assert "session.start" not in info.value.message


def test_error_events_always_encode() -> None:
    fields = error_fields("invalid_field", "bad \ud800 " + "m" * 5000, "\udfff")
    assert "request_id" not in fields
    assert len(fields["message"]) <= MAX_ERROR_MESSAGE
    assert fields["message"].startswith("bad \\ud800 ")
    for codec in (JsonCodec(), MsgpackCodec()):
        assert codec.decode(codec.encode(fields)) == fields
    assert error_fields("c", "m", "r" * 129) == {"code": "c", "message": "m"}
    assert error_fields("c", "m", "r7")["request_id"] == "r7"


def test_the_documented_limits_are_the_enforced_ones() -> None:
    assert f"{MAX_DEPTH} levels" in ERROR_CODES["invalid_json"].description
    assert f"{MAX_DEPTH} levels" in ERROR_CODES["invalid_msgpack"].description
    assert f"{MAX_VALUES:,} values" in ERROR_CODES["invalid_field"].description
