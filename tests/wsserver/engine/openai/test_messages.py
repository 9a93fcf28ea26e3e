"""Our turns, tools and limits in the chat-completions request body."""

from __future__ import annotations

from protocol.conversation import ToolCall, Turn
from protocol.generation import GenerationRequest
from wsserver.engine.openai.config import OpenAIEngineConfig
from wsserver.engine.openai.messages import chat_messages, request_body

TOOL = {
    "name": "get_weather",
    "description": "Weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def test_history_with_calls_and_results_in_the_upstreams_format() -> None:
    prompt = [
        Turn("system", "be brief"),
        Turn("user", "weather in Paris?"),
        Turn("assistant", "", (ToolCall("call_1", "get_weather", '{"city": "Paris"}'),)),
        Turn("tool", '{"temp": 21}', tool_call_id="call_1"),
        Turn("assistant", "It is 21."),
    ]
    assert chat_messages(prompt) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
        {"role": "assistant", "content": "It is 21."},
    ]


def test_a_prefix_is_a_final_assistant_message_to_continue() -> None:
    messages = chat_messages([Turn("user", "count")], prefix="one two")
    assert messages[-1] == {"role": "assistant", "content": "one two"}


def test_the_body_streams_with_usage_tools_format_and_cap() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    request = GenerationRequest(
        "r", [Turn("user", "hi")], 17, tools=(TOOL,), response_format=schema
    )
    config = OpenAIEngineConfig(model="m", temperature=0.0, extra_body={"seed": 7, "model": "x"})
    body = request_body(request, config)
    assert body["model"] == "m", "our fields win over extra ones"
    assert body["seed"] == 7
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 17
    assert body["temperature"] == 0.0
    assert body["tools"] == [{"type": "function", "function": TOOL}]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": schema},
    }


def test_the_cap_field_can_be_max_completion_tokens() -> None:
    request = GenerationRequest("r", [Turn("user", "hi")], 5)
    body = request_body(request, OpenAIEngineConfig(max_tokens_field="max_completion_tokens"))
    assert body["max_completion_tokens"] == 5
    assert "max_tokens" not in body
    assert "tools" not in body and "temperature" not in body
