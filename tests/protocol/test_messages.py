from __future__ import annotations

from typing import Any

import pytest

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
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
