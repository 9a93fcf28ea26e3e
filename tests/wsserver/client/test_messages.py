"""The client messages the SDK's methods send: arguments left as None are left out."""

from __future__ import annotations

import pytest

from protocol.messages import parse_client_message
from wsserver.client import messages


def test_response_create() -> None:
    assert messages.response_create(None, None, None) == {"type": "response.create"}
    schema = {"type": "object"}
    assert messages.response_create("hi", 5, schema) == {
        "type": "response.create",
        "input": "hi",
        "max_output_tokens": 5,
        "response_format": {"type": "json_schema", "schema": schema},
    }


def test_response_continue() -> None:
    assert messages.response_continue("resp_1", None) == {
        "type": "response.continue",
        "response_id": "resp_1",
    }
    assert messages.response_continue("resp_1", 9)["max_output_tokens"] == 9


def test_response_interrupt_and_cancel() -> None:
    assert messages.response_interrupt(None, None, None) == {"type": "response.interrupt"}
    assert messages.response_interrupt(12, 340, "resp_2") == {
        "type": "response.interrupt",
        "rendered_chars": 12,
        "played_ms": 340,
        "response_id": "resp_2",
    }
    # Zero is a position, not an absent argument.
    assert messages.response_interrupt(0, 0, None)["played_ms"] == 0
    assert messages.response_cancel(None) == {"type": "response.cancel"}
    assert messages.response_cancel("resp_2")["response_id"] == "resp_2"


def test_ping() -> None:
    assert messages.ping(None) == {"type": "ping"}
    assert messages.ping("p1") == {"type": "ping", "id": "p1"}


def test_response_overrides_keep_falsy_values_and_drop_none() -> None:
    assert messages.overrides(None, None, None) == {}
    assert messages.overrides("", [], False) == {
        "instructions": "",
        "tools": [],
        "audio_output": False,
    }


def test_session_update_needs_a_setting_and_keeps_an_empty_one() -> None:
    with pytest.raises(ValueError, match="at least one setting"):
        messages.session_update(None, None, None, None)
    message = messages.session_update("", None, {"sample_rate": 16000}, "client")
    assert message == {
        "type": "session.update",
        "instructions": "",
        "audio": {"sample_rate": 16000},
        "tool_rounds": "client",
    }
    parse_client_message(message)  # what the server accepts


def test_start_settings() -> None:
    assert messages.start_settings(None, None) is None
    assert messages.start_settings(0, "client") == {"tool_rounds": "client"}
    assert messages.start_settings(7, None) == {"max_output_tokens": 7}
