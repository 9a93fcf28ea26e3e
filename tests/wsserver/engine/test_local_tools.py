"""The small-model tool aid and the tools template: their shape, and on the real model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wsserver.engine.local_tools import (
    TOOL_CALL_PREFILL,
    TOOL_CALL_STOP,
    LocalToolsError,
    ToolCallAid,
    chat_template_path,
    load_tool_example,
    tools_template_path,
)

SET_LIGHT = {
    "type": "function",
    "function": {
        "name": "set_light",
        "description": "Turn the light in a room on or off.",
        "parameters": {
            "type": "object",
            "properties": {"room": {"type": "string"}, "on": {"type": "boolean"}},
            "required": ["room", "on"],
        },
    },
}

EXAMPLE = Path(__file__).parent / "fixtures" / "set_light_example.json"


def _body(*messages: dict[str, Any], tools: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "messages": list(messages), "stream": True}
    if tools:
        body["tools"] = [SET_LIGHT]
    return body


USER = {"role": "user", "content": "Please turn on the light in the kitchen."}


def test_no_tools_leaves_the_body_alone() -> None:
    body = _body(USER, tools=False)
    assert ToolCallAid(load_tool_example(str(EXAMPLE))).apply(body) == body


def test_user_turn_gets_example_after_system_and_the_prefill() -> None:
    example = load_tool_example(str(EXAMPLE))
    system = {"role": "system", "content": "be brief"}
    body = _body(system, USER)
    body["stop"] = "STOP"
    out = ToolCallAid(example).apply(body)
    assert out["messages"][0] == system
    assert out["messages"][1 : 1 + len(example)] == list(example)
    assert out["messages"][-2] == USER
    assert out["messages"][-1] == {"role": "assistant", "content": TOOL_CALL_PREFILL}
    assert out["tool_choice"] == "required"
    assert out["stop"] == ["STOP", TOOL_CALL_STOP]
    assert body["messages"] == [system, USER], "the caller's body is not changed"


def test_after_a_tool_result_only_the_example() -> None:
    example = load_tool_example(str(EXAMPLE))
    result = {"role": "tool", "tool_call_id": "c1", "content": "{}"}
    out = ToolCallAid(example).apply(_body(USER, result))
    assert out["messages"][-1] == result
    assert out["messages"][: len(example)] == list(example)
    assert "tool_choice" not in out and "stop" not in out


def test_example_about_other_tools_is_left_out() -> None:
    example = load_tool_example(str(EXAMPLE))
    body = _body(USER)
    body["tools"] = [{"type": "function", "function": {"name": "get_weather"}}]
    out = ToolCallAid(example).apply(body)
    assert out["messages"] == [USER, {"role": "assistant", "content": TOOL_CALL_PREFILL}]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{", "not JSON"),
        ("[]", "non-empty list"),
        ('[{"role": "wizard"}]', "needs a role"),
        ('[{"role": "user", "content": 3}]', "content must be text"),
        ('[{"role": "user", "content": "hi"}]', "no assistant message calls a tool"),
        ('[{"role": "assistant", "tool_calls": [{"function": {}}]}]', "without a name"),
        ('[{"role": "assistant", "tool_calls": "x"}]', "must be a list"),
        ("[" + ",".join(['{"role": "user"}'] * 40) + "]", "more than 32"),
        ('"' + "x" * 70_000 + '"', "over 65536 bytes"),
        (b"\xff\xfe".decode("latin-1"), "not JSON"),
    ],
)
def test_bad_example_files_are_refused(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "example.json"
    path.write_text(text, encoding="latin-1")
    with pytest.raises(LocalToolsError, match=reason):
        load_tool_example(str(path))
    with pytest.raises(LocalToolsError, match="cannot read"):
        load_tool_example(str(tmp_path / "missing.json"))


def test_template_choice() -> None:
    assert chat_template_path("") is None
    assert chat_template_path("tools") == tools_template_path()
    assert "<tool_call>" in Path(tools_template_path()).read_text()
    assert chat_template_path("/models/own.jinja") == "/models/own.jinja"


# --- on the real model (llama.cpp's server, SmolLM2-135M, the tools template) ---


def _complete(address: str, body: dict[str, Any]) -> dict[str, Any]:
    import httpx

    body = {**body, "stream": False, "temperature": 0, "max_tokens": 60}
    answer = httpx.post(address + "/v1/chat/completions", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    choice: dict[str, Any] = answer.json()["choices"][0]
    return choice


def test_smollm2_calls_the_tool_and_answers_from_the_result(tools_llama_address: str) -> None:
    aid = ToolCallAid(load_tool_example(str(EXAMPLE)))
    choice = _complete(tools_llama_address, aid.apply(_body(USER)))
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "set_light"
    assert json.loads(call["function"]["arguments"]) == {"room": "kitchen", "on": True}

    called = {"role": "assistant", "content": None, "tool_calls": [call]}
    result = {"role": "tool", "tool_call_id": call["id"], "content": '{"ok": true}'}
    choice = _complete(tools_llama_address, aid.apply(_body(USER, called, result)))
    assert choice["finish_reason"] == "stop"
    answer = choice["message"]["content"].lower()
    assert "kitchen" in answer and " on" in answer


def test_smollm2_without_the_aid_calls_nothing(tools_llama_address: str) -> None:
    """Why the aid exists: the same request, unaided, gets prose."""
    choice = _complete(tools_llama_address, _body(USER))
    assert choice["finish_reason"] != "tool_calls"
    assert not choice["message"].get("tool_calls")
