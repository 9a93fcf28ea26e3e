"""Our request in the upstream's words: the body of one ``POST /chat/completions``.

Turns become chat messages (an assistant turn's calls as ``tool_calls``, a tool turn
with its ``tool_call_id``), tools become ``function`` tools, a response format becomes
a ``json_schema`` one. A request's ``prefix`` (text already given for this turn, as
``response.continue`` sends) is a final assistant message: servers that prefill it
(llama.cpp's) continue that text; docs/ENGINES.md says which servers do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocol.conversation import Turn
from protocol.generation import GenerationRequest
from wsserver.engine.openai.config import OpenAIEngineConfig


def chat_messages(prompt: Sequence[Turn], prefix: str = "") -> list[dict[str, Any]]:
    """The conversation as chat messages, with ``prefix`` as a final assistant message."""
    messages = [_message(turn) for turn in prompt]
    if prefix:
        messages.append({"role": "assistant", "content": prefix})
    return messages


def _message(turn: Turn) -> dict[str, Any]:
    if turn.role == "tool":
        return {"role": "tool", "tool_call_id": turn.tool_call_id or "", "content": turn.text}
    if turn.role == "assistant" and turn.tool_calls:
        return {
            "role": "assistant",
            # Servers differ on "" and null beside calls; null is what OpenAI documents.
            "content": turn.text or None,
            "tool_calls": [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in turn.tool_calls
            ],
        }
    return {"role": turn.role, "content": turn.text}


def chat_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Declared tools (name, description, parameters) as ``function`` tools."""
    out = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description"):
            function["description"] = tool["description"]
        function["parameters"] = tool.get("parameters") or {"type": "object", "properties": {}}
        out.append({"type": "function", "function": function})
    return out


def request_body(request: GenerationRequest, config: OpenAIEngineConfig) -> dict[str, Any]:
    """The JSON body that streams ``request`` from the upstream."""
    body: dict[str, Any] = dict(config.extra_body)
    body.update(
        {
            "model": config.model,
            "messages": chat_messages(request.prompt, request.prefix),
            "stream": True,
            "stream_options": {"include_usage": True},
            config.max_tokens_field: request.max_output_tokens,
        }
    )
    if request.prefix and config.continue_final_message:
        body["continue_final_message"] = True
        body["add_generation_prompt"] = False
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if request.tools:
        body["tools"] = chat_tools(request.tools)
    if request.response_format is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": request.response_format},
        }
    if config.rewrite_body is not None:
        body = config.rewrite_body(body)
    return body
