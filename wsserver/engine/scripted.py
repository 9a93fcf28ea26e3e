"""What the simulated engine "decides" beyond plain text: tool calls and JSON.

Deterministic scripts, so tests and demos know what comes:

* a user turn asking for "weather in Paris" (or "weather in Paris and London")
  calls a declared ``get_weather`` tool once per city, ``{"city": "Paris"}``;
* "call <tool>" calls that declared tool with arguments made from its schema;
* "bad arguments" makes the call's arguments miss the schema (a string field
  gets a number), to exercise validation; told why (a retry), it writes them right;
* after tool results, the answer quotes them;
* with a response format, the answer is a JSON document made from the schema.

Arguments and JSON stream in small fragments, one per decode step, as a model
writes them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from protocol.conversation import Turn
from wsserver.engine.base import GenerationRequest, OutputChunk, ToolCallFragment

_WEATHER = re.compile(r"weather in ([A-Za-z]+)(?:\s+and\s+([A-Za-z]+))?", re.IGNORECASE)
_CALL = re.compile(r"\bcall ([A-Za-z0-9_-]+)")
_WORDS = ("alpha", "bravo", "delta", "echo", "lima", "oscar", "sierra", "tango")
_FRAGMENT = 5
"""Characters of arguments or JSON per decode step."""


def script_for(request: GenerationRequest, seed: int) -> list[OutputChunk] | None:
    """The chunks this request produces, or ``None`` for plain deterministic text."""
    prompt = request.prompt
    last = prompt[-1] if prompt else None
    if last is not None and last.role == "tool":
        if "invalid_arguments" in last.text:
            # Told its call was invalid: write the calls of the user's turn again, right.
            asked = next(t for t in reversed(prompt) if t.role == "user")
            return _calls_for(asked.text, request, seed, careful=True)
        return _quote_results(prompt)
    if request.response_format is not None:
        document = json.dumps(sample(request.response_format, seed))
        return [OutputChunk(part) for part in _pieces(document, seed)]
    if last is not None and last.role == "user" and request.tools:
        calls = _calls_for(last.text, request, seed)
        if calls:
            return calls
    return None


def _calls_for(
    text: str, request: GenerationRequest, seed: int, *, careful: bool = False
) -> list[OutputChunk]:
    tools = {t["name"]: t for t in request.tools}
    wanted: list[tuple[str, Any]] = []
    weather = _WEATHER.search(text)
    if weather and "get_weather" in tools:
        wanted += [("get_weather", {"city": c}) for c in weather.groups() if c]
    for name in _CALL.findall(text):
        if name in tools:
            wanted.append((name, sample(tools[name].get("parameters", {}), seed)))
    if "bad arguments" in text and not careful:
        wanted = [(name, _break(args)) for name, args in wanted]
    chunks: list[OutputChunk] = []
    for index, (name, arguments) in enumerate(wanted):
        call_id = (
            "call_" + hashlib.sha256(f"{request.request_id}/{index}".encode()).hexdigest()[:16]
        )
        for part in _pieces(json.dumps(arguments), seed + index):
            chunks.append(OutputChunk("", 1, tool_call=ToolCallFragment(call_id, name, part)))
        chunks.append(OutputChunk("", 0, tool_call=ToolCallFragment(call_id, name, complete=True)))
    return chunks


def _quote_results(prompt: Sequence[Turn]) -> list[OutputChunk]:
    results = []
    for turn in reversed(prompt):
        if turn.role != "tool":
            break
        results.append(turn.text)
    words = ["Here", " is", " what", " the", " tools", " said:"]
    words += [" " + text for text in reversed(results)]
    words += [" that", " is", " all."]
    return [OutputChunk(word) for word in words]


def _pieces(text: str, seed: int) -> list[str]:
    """``text`` cut into fragments of 1 to ``_FRAGMENT`` characters."""
    pieces, start, step = [], 0, seed
    while start < len(text):
        step = (step * 1103515245 + 12345) & 0x7FFFFFFF
        size = 1 + step % _FRAGMENT
        pieces.append(text[start : start + size])
        start += size
    return pieces


def _break(arguments: Any) -> Any:
    """The arguments with every string value replaced by a number."""
    if isinstance(arguments, dict):
        return {k: 42 if isinstance(v, str) else _break(v) for k, v in arguments.items()}
    return 42


def sample(schema: dict[str, Any], seed: int) -> Any:
    """A deterministic value that matches a (simple) JSON Schema."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][seed % len(schema["enum"])]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            key: sample(sub, seed + index) for index, (key, sub) in enumerate(properties.items())
        }
    if kind == "array":
        count = max(schema.get("minItems", 0), 2)
        return [sample(schema.get("items", {}), seed + i) for i in range(count)]
    if kind == "string":
        return _WORDS[seed % len(_WORDS)] + " " + _WORDS[(seed // 7) % len(_WORDS)]
    if kind in ("integer", "number"):
        low = int(schema.get("minimum", 0))
        high = int(schema.get("maximum", low + 99))
        value = low + seed % (high - low + 1)
        return value if kind == "integer" else float(value)
    if kind == "boolean":
        return seed % 2 == 0
    return None
