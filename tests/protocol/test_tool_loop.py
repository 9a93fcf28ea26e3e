"""The tool loop's schema side: tools compiled safely, calls validated without crashing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.tool_loop import CallState, ToolArgumentsInvalid, ToolLoop

FORM: dict[str, Any] = {
    "name": "form",
    "parameters": {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
    },
}


def call_with(loop: ToolLoop, arguments: str) -> ToolArgumentsInvalid:
    """Stream ``arguments`` as one call and complete it; the refusal it gets."""
    loop.fragment("resp_1", 0, "call_1", "form", arguments)
    with pytest.raises(ToolArgumentsInvalid) as caught:
        loop.complete("call_1")
    assert loop.calls["call_1"].state is CallState.DROPPED
    return caught.value


def test_valid_arguments_become_a_call() -> None:
    loop = ToolLoop()
    loop.set_tools([FORM])
    loop.fragment("resp_1", 0, "call_1", "form", '{"items": [1, 2]}')
    event = loop.complete("call_1")
    assert event.fields["arguments"] == {"items": [1, 2]}


def test_arguments_nested_past_the_json_module_are_refused_not_a_crash() -> None:
    """Before: ``json.loads`` raised RecursionError out of the engine's output path."""
    loop = ToolLoop()
    loop.set_tools([FORM])
    invalid = call_with(loop, "[" * 100_000 + "]" * 100_000)
    assert "nests deeper than 60 levels" in invalid.message


def test_arguments_nested_past_the_limit_do_not_match() -> None:
    loop = ToolLoop()
    loop.set_tools([FORM])
    invalid = call_with(loop, '{"items": ' + "[" * 500 + "]" * 500 + "}")
    assert "nests deeper than 60 levels" in invalid.message


@pytest.mark.parametrize(
    "parameters",
    [
        {"$ref": "http://127.0.0.1:9/schema.json"},
        {"$ref": "#"},
        {"type": "array", "minItems": 10**6},
    ],
)
def test_a_bad_tool_schema_changes_nothing(parameters: dict[str, Any]) -> None:
    loop = ToolLoop()
    loop.set_tools([FORM])
    with pytest.raises(ProtocolViolation) as caught:
        loop.set_tools([{"name": "other", "parameters": parameters}])
    assert caught.value.code is ErrorCode.INVALID_SCHEMA
    assert "parameters of other" in caught.value.message
    assert list(loop.tools) == ["form"]


@pytest.mark.parametrize(
    "arguments",
    ['{"items": [], "x": "\\ud800"}', '{"\\udc00": 1}', '{"x": "a\ud800b"}'],
    ids=["high-escape", "low-escape-key", "raw-surrogate"],
)
def test_arguments_with_a_lone_surrogate_are_invalid(arguments: str) -> None:
    """A string no UTF-8 encoder can send never reaches the client as a call (before: the
    call event could not be encoded, and the writer died)."""
    loop = ToolLoop()
    loop.set_tools([FORM])
    delta = loop.fragment("resp_1", 0, "call_1", "form", arguments)
    json.dumps(delta.fields["arguments"], ensure_ascii=False).encode()  # sendable
    with pytest.raises(ToolArgumentsInvalid) as caught:
        loop.complete("call_1")
    assert "not valid json" in caught.value.message


def test_a_surrogate_pair_is_fine() -> None:
    loop = ToolLoop()
    loop.set_tools([FORM])
    loop.fragment("resp_1", 0, "call_1", "form", '{"x": "\\ud83d\\ude00"}')
    assert loop.complete("call_1").fields["arguments"] == {"x": "\U0001f600"}
