"""The tool loop's schema side: tools compiled safely, calls validated without crashing."""

from __future__ import annotations

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


def test_arguments_nested_past_the_parser_are_invalid_not_a_crash() -> None:
    """Before: ``json.loads`` raised RecursionError out of the engine's output path."""
    loop = ToolLoop()
    loop.set_tools([FORM])
    invalid = call_with(loop, "[" * 100_000 + "]" * 100_000)
    assert "not valid json" in invalid.message


def test_arguments_nested_past_the_limit_do_not_match() -> None:
    loop = ToolLoop()
    loop.set_tools([FORM])
    invalid = call_with(loop, '{"items": ' + "[" * 500 + "]" * 500 + "}")
    assert "nests deeper than 64 levels" in invalid.message


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
