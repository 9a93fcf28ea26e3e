"""Scripted output: what the simulated engine "decides" beyond plain text (tool calls
and JSON).

Deterministic scripts, so tests and demos know what comes:

* a user turn asking for "weather in Paris" (or "weather in Paris and London")
  calls a declared ``get_weather`` tool once per city, ``{"city": "Paris"}``;
* "call <tool>" calls that declared tool with arguments made from its schema;
* "bad arguments" makes the call's arguments miss the schema (a string field
  gets a number), to exercise validation; told why (a retry), it writes them right;
* after tool results, the answer quotes them;
* with a response format, the answer is a JSON document made from the schema.

Arguments and JSON stream in small fragments, one per decode step, as a model
writes them. A script never holds more than the request's ``max_output_tokens``
(plus one, so the engine sees the answer was longer): a schema that asks for
200,000 items, or arrays nested in arrays, costs what the output budget allows,
not what the schema asks for.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections.abc import Sequence
from typing import Any

from protocol.conversation import Turn
from wsserver.engine.base import (
    GenerationRequest,
    OutputChunk,
    ToolCallFragment,
)

log = logging.getLogger(__name__)

_WEATHER = re.compile(r"weather in ([A-Za-z]+)(?:\s+and\s+([A-Za-z]+))?", re.IGNORECASE)
_CALL = re.compile(r"\bcall ([A-Za-z0-9_-]+)")
_WORDS = ("alpha", "bravo", "delta", "echo", "lima", "oscar", "sierra", "tango")
_FRAGMENT = 5
"""Characters of arguments or JSON per decode step."""
_SAMPLE_DEPTH = 64
"""Nesting past which a sample holds ``null`` (a recursive schema ends here)."""


def count_prompt_tokens(prompt: Sequence[Turn]) -> int:
    """Whitespace tokens plus a small per-turn overhead, as chat templates add."""
    return sum(len(turn.text.split()) + 4 for turn in prompt)


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
        document = json.dumps(sample(request.response_format, seed, _budget(request)))
        return [
            OutputChunk(part) for part in _pieces(document, seed, request.max_output_tokens + 1)
        ]
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
    limit = request.max_output_tokens + 1
    budget = _budget(request)
    for name in _CALL.findall(text):
        if len(wanted) >= limit:
            break  # every call takes a token at least: the rest could never be written
        if name in tools:
            wanted.append((name, sample(tools[name].get("parameters", {}), seed, budget)))
    if "bad arguments" in text and not careful:
        wanted = [(name, _break(args)) for name, args in wanted]
    chunks: list[OutputChunk] = []
    for index, (name, arguments) in enumerate(wanted):
        call_id = (
            "call_" + hashlib.sha256(f"{request.request_id}/{index}".encode()).hexdigest()[:16]
        )
        for part in _pieces(json.dumps(arguments), seed + index, limit - len(chunks)):
            chunks.append(OutputChunk("", 1, tool_call=ToolCallFragment(call_id, name, part)))
        if len(chunks) >= limit:
            break
        chunks.append(OutputChunk("", 0, tool_call=ToolCallFragment(call_id, name, complete=True)))
    return chunks


def _budget(request: GenerationRequest) -> int:
    """Characters of JSON the request can ever emit (one fragment per token)."""
    return (request.max_output_tokens + 1) * _FRAGMENT


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


def _pieces(text: str, seed: int, limit: int) -> list[str]:
    """``text`` cut into fragments of 1 to ``_FRAGMENT`` characters, at most ``limit``."""
    pieces: list[str] = []
    start, step = 0, seed
    while start < len(text) and len(pieces) < limit:
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


def sample(schema: Any, seed: int, budget: int = 1 << 20) -> Any:
    """A deterministic value that matches a (simple) JSON Schema.

    ``budget`` bounds the work: once about that many characters of JSON are made,
    arrays and objects stop growing (the answer is cut by its token budget before
    that point anyway). References inside the schema (``#/$defs/x``) are followed.
    """
    return _Sampler(schema, budget).value(schema, seed, 0)


class _Sampler:
    """One sample's root (for references) and what is left of its budget."""

    __slots__ = ("left", "root")

    def __init__(self, root: Any, budget: int) -> None:
        self.root = root
        self.left = budget

    def value(self, schema: Any, seed: int, depth: int) -> Any:
        self.left -= 4  # the value's own punctuation, at least
        if not isinstance(schema, dict) or self.left <= 0 or depth > _SAMPLE_DEPTH:
            return None
        target = self._target(schema.get("$ref"))
        if target is not None:
            return self.value(target, seed, depth + 1)
        if "const" in schema:
            return self._charged(schema["const"])
        choices = schema.get("enum")
        if isinstance(choices, list) and choices:
            return self._charged(choices[seed % len(choices)])
        kind = schema.get("type", "object")
        if isinstance(kind, list):
            kind = kind[0] if kind else "object"
        if kind == "object":
            properties = schema.get("properties", {})
            out: dict[str, Any] = {}
            if isinstance(properties, dict):
                for index, (key, sub) in enumerate(properties.items()):
                    if self.left <= 0:
                        break
                    self.left -= len(key) + 4
                    out[key] = self.value(sub, seed + index, depth + 1)
            return out
        if kind == "array":
            count = max(
                _number(schema.get("minItems"), 0), min(2, _number(schema.get("maxItems"), 2))
            )
            items: list[Any] = []
            while len(items) < count and self.left > 0:
                items.append(self.value(schema.get("items", {}), seed + len(items), depth + 1))
            return items
        if kind == "string":
            self.left -= 16
            return _WORDS[seed % len(_WORDS)] + " " + _WORDS[(seed // 7) % len(_WORDS)]
        if kind in ("integer", "number"):
            low = _number(schema.get("minimum"), 0)
            high = _number(schema.get("maximum"), low + 99)
            value = low + seed % (high - low + 1) if high >= low else low
            self.left -= len(str(value))
            return value if kind == "integer" else float(value)
        if kind == "boolean":
            return seed % 2 == 0
        return None

    def _target(self, ref: Any) -> Any:
        """The subschema a ``#...`` JSON pointer names, or ``None``."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        node = self.root
        for part in ref[1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node if isinstance(node, dict) else None

    def _charged(self, value: Any) -> Any:
        try:
            self.left -= len(json.dumps(value))
        except (TypeError, ValueError, RecursionError):
            self.left -= 16
        return value


def _number(value: Any, default: int) -> int:
    """A schema's bound as an int (``default`` when absent, not finite, or not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    if isinstance(value, float) and not math.isfinite(value):
        return default
    return math.ceil(value)
