"""Tool calling on tiny local models: a tools-capable chat template and a small-model aid.

A 135M-parameter model such as SmolLM2 does not call tools on its own: its chat template
ignores ``tools``, and even with one that lists them it writes prose or invents tool
names. Three things together make it call a declared tool reliably at temperature 0
(measured on SmolLM2-135M with llama.cpp's server):

- a chat template that renders tools and calls in the ``<tool_call>`` format llama.cpp
  parses (:data:`TOOLS_TEMPLATE`, ChatML in the style of Qwen2.5's template);
- a worked example in the history: a user asks, the assistant calls a tool, the tool
  answers, the assistant answers from the result (:func:`load_tool_example`);
- when the last turn is the user's, a final assistant message prefilled with
  ``"<tool_call>\\n"`` that the server continues, with ``tool_choice: "required"`` (the
  server's grammar then keeps the name and arguments to the declared tools) and a stop at
  ``"</tool_call>"`` (one call per round: without it the model repeats the call).

This is an aid for tiny models, not a general mechanism: with it, every user turn of a
session that declares tools starts with a tool call (the model cannot choose to answer
directly), one call per round, and the example should be about the session's own tools.
A capable model with its own tools template needs none of it.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from wsserver.engine.base import EngineError

TOOLS_TEMPLATE = "tools"
"""The name that selects the shipped tools-capable template (``--local-chat-template``)."""

TOOL_CALL_PREFILL = "<tool_call>\n"
"""The text the aid puts at the start of the assistant's answer."""

TOOL_CALL_STOP = "</tool_call>"
"""Where the aid stops a round (after one call)."""

MAX_EXAMPLE_BYTES = 64 * 1024
"""Largest worked-example file accepted."""

MAX_EXAMPLE_MESSAGES = 32
"""Most messages a worked example may have."""

_ROLES = frozenset({"system", "user", "assistant", "tool"})


class LocalToolsError(EngineError, ValueError):
    """A chat template or worked example that cannot be used (unreadable, malformed)."""


def tools_template_path() -> str:
    """The path of the shipped tools-capable ChatML template."""
    return str(resources.files("wsserver.engine") / "templates" / "chatml_tools.jinja")


def chat_template_path(choice: str) -> str | None:
    """The template file ``--local-chat-template`` names: ``""`` (the model's own, so
    ``None``), ``tools`` (the shipped one) or a path to a Jinja file (read when the
    server starts, which fails clearly if it cannot)."""
    if not choice:
        return None
    return tools_template_path() if choice == TOOLS_TEMPLATE else choice


def load_tool_example(path: str) -> tuple[dict[str, Any], ...]:
    """The worked example in a JSON file: a list of chat messages in the OpenAI format
    (a ``user`` message, an ``assistant`` one with ``tool_calls``, a ``tool`` result, an
    ``assistant`` answer), checked for shape and size."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise LocalToolsError(f"cannot read tool example {path!r}: {exc}") from exc
    if len(raw) > MAX_EXAMPLE_BYTES:
        raise LocalToolsError(f"tool example {path!r} is over {MAX_EXAMPLE_BYTES} bytes")
    try:
        messages = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise LocalToolsError(f"tool example {path!r} is not JSON: {exc}") from exc
    return parse_tool_example(messages, path)


def parse_tool_example(messages: Any, source: str = "tool example") -> tuple[dict[str, Any], ...]:
    """Check a worked example (already parsed JSON); the messages as a tuple."""
    if not isinstance(messages, list) or not messages:
        raise LocalToolsError(f"{source}: must be a non-empty list of chat messages")
    if len(messages) > MAX_EXAMPLE_MESSAGES:
        raise LocalToolsError(f"{source}: more than {MAX_EXAMPLE_MESSAGES} messages")
    for number, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise LocalToolsError(
                f"{source}: message {number} needs a role of {', '.join(sorted(_ROLES))}"
            )
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise LocalToolsError(f"{source}: message {number} content must be text")
        for call in _calls(message):
            if not isinstance(call.get("function"), dict) or not isinstance(
                call["function"].get("name"), str
            ):
                raise LocalToolsError(f"{source}: message {number} has a call without a name")
    if not example_tool_names(messages):
        raise LocalToolsError(f"{source}: no assistant message calls a tool")
    return tuple(messages)


def example_tool_names(messages: Any) -> frozenset[str]:
    """The names of the tools a worked example calls."""
    names = set()
    for message in messages:
        for call in _calls(message):
            function = call.get("function")
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                names.add(function["name"])
    return frozenset(names)


def _calls(message: Any) -> list[dict[str, Any]]:
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    if calls is None:
        return []
    if not isinstance(calls, list) or not all(isinstance(call, dict) for call in calls):
        raise LocalToolsError("tool example: tool_calls must be a list of objects")
    return calls


@dataclass(frozen=True, slots=True)
class ToolCallAid:
    """Rewrites a ``/chat/completions`` body so a tiny model calls the declared tools."""

    example: tuple[dict[str, Any], ...] = ()
    """A worked example put before the conversation (after its system messages)."""

    def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body with the example and, when the user spoke last, the prefill; a body
        without tools is returned unchanged."""
        tools = body.get("tools")
        messages = body.get("messages")
        if not tools or not isinstance(messages, list):
            return body
        declared = {
            tool["function"]["name"]
            for tool in tools
            if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
        }
        out = dict(body)
        conversation = list(messages)
        # An example that calls a tool the session does not declare teaches the model to
        # call that one (the server then fails to parse the answer): leave it out.
        if self.example and example_tool_names(self.example) <= declared:
            start = 0
            while start < len(conversation) and conversation[start].get("role") == "system":
                start += 1
            conversation[start:start] = copy.deepcopy(list(self.example))
        if conversation and conversation[-1].get("role") == "user":
            conversation.append({"role": "assistant", "content": TOOL_CALL_PREFILL})
            out["tool_choice"] = "required"
            stops = out.get("stop") or []
            out["stop"] = [*([stops] if isinstance(stops, str) else stops), TOOL_CALL_STOP]
        out["messages"] = conversation
        return out
