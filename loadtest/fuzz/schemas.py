"""Hostile JSON Schemas: remote and file references, self references, unbounded work.

A schema reaches the server two ways: a tool's ``parameters`` (compiled at
``session.start``/``session.update``, used when the engine calls the tool: the
simulated engine calls tool ``t`` when the user says "call t") and a
``response_format`` (used when the answer is checked, at its end). So every
case starts a response and waits for it to end before the connection closes.
"""

from __future__ import annotations

import random
from typing import Any

from loadtest.fuzz.cases import SESSION_START, Batch, FuzzContext, frame_of


def remote_refs(ctx: FuzzContext, tag: str) -> list[dict[str, Any]]:
    """Schemas that name something outside themselves (the trap server, the canary file)."""
    trap, canary = f"{ctx.trap_url}/{tag}", f"file://{ctx.canary_path}"
    return [
        {"$ref": f"{trap}/a.json"},
        {"type": "object", "properties": {"a": {"$ref": f"{trap}/b.json"}}},
        {"$ref": canary},
        {"type": "object", "properties": {"a": {"$ref": canary}}},
        {"$schema": f"{trap}/meta.json", "type": "object"},
        {"$id": f"{trap}/base/", "$ref": "other.json"},
        {"$dynamicRef": f"{trap}/d.json#x"},
        {"allOf": [{"$ref": f"{trap}/c.json"}]},
        {"$ref": "file:///etc/hostname"},
        {"$ref": f"{trap}/e.json#/definitions/x"},
    ]


SELF_REFS: list[dict[str, Any]] = [
    {"$ref": "#"},
    {"$ref": "#/$defs/missing"},
    {"$ref": "#/not/a/pointer"},
    {"$ref": "#/%%%"},
    {"$ref": "#/properties/a", "properties": {"a": {"$ref": "#/properties/a"}}},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    {"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]},
    {"type": "array", "items": {"$ref": "#"}, "minItems": 1},
    {"$ref": 5},
    {"$ref": "other.json"},
    {"$anchor": "x", "$ref": "#x"},
    {
        "type": "object",
        "properties": {"a": {"$ref": "#/properties/b"}, "b": {"$ref": "#/properties/a"}},
    },
]


def huge_schemas(rng: random.Random) -> list[dict[str, Any]]:
    """Schemas whose sample value is huge: many items, nested arrays, many properties."""
    nested: dict[str, Any] = {"type": "integer"}
    for _ in range(4):
        nested = {"type": "array", "minItems": 20, "items": nested}
    return [
        {"type": "array", "minItems": rng.choice((20_000, 200_000))},
        nested,
        {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(5000)}},
        {"enum": list(range(50_000))},
    ]


def _requests(schema: dict[str, Any], encoding: str) -> list[Any]:
    """The schema as a response format, and as a tool's parameters with a call asked for."""
    format_message = {
        "type": "response.create",
        "input": "x",
        "response_format": {"type": "json_schema", "schema": schema},
    }
    tool_messages = [
        {"type": "session.update", "tools": [{"name": "t", "parameters": schema}]},
        {"type": "response.create", "input": "call t"},
    ]
    frames = [frame_of(format_message, encoding)]
    frames += [frame_of(m, encoding) for m in tool_messages]
    return [f for f in frames if f is not None]


def schema_remote_ref(rng: random.Random, ctx: FuzzContext) -> Batch:
    """Remote and file ``$ref``: nothing may be fetched or read (the trap counts requests)."""
    encoding = rng.choice(("json", "msgpack"))
    schema = rng.choice(remote_refs(ctx, f"r{rng.randrange(10**9)}"))
    batch = Batch("schema_remote_ref", encoding, SESSION_START, response_wait_s=10.0)
    batch.frames = _requests(schema, encoding)
    if rng.random() < 0.5:
        # Declared at session.start too (compiled there).
        start = dict(SESSION_START)
        start["tools"] = [{"name": "t", "parameters": schema}]
        batch.session = start
    return batch


def schema_self_ref(rng: random.Random, ctx: FuzzContext) -> Batch:
    """Self-referencing and unresolvable schemas: every response still ends once."""
    encoding = rng.choice(("json", "msgpack"))
    batch = Batch("schema_self_ref", encoding, SESSION_START, response_wait_s=10.0)
    batch.frames = _requests(rng.choice(SELF_REFS), encoding)
    return batch


def many_tool_schemas() -> dict[str, Any]:
    """``session.update`` with the most tools, each a schema of 135 subschemas (~780 KB)."""
    leaf = {"type": "string", "pattern": "^a+$"}
    inner = {"type": "object", "properties": {f"q{j}": leaf for j in range(8)}}
    schema = {"type": "object", "properties": {f"p{i}": inner for i in range(15)}}
    tools = [{"name": f"t{i}", "parameters": schema} for i in range(128)]
    return {"type": "session.update", "tools": tools}


def schema_huge(rng: random.Random, ctx: FuzzContext) -> Batch:
    """A schema that asks for a huge answer (the response is cancelled once it started),
    or many big tool schemas, whose checking alone is seconds of work."""
    encoding = rng.choice(("json", "msgpack"))
    if rng.random() < 0.2:
        frame = frame_of(many_tool_schemas(), encoding)
        return Batch("schema_huge", encoding, SESSION_START, [frame] if frame else [])
    message = {
        "type": "response.create",
        "input": "x",
        "response_format": {"type": "json_schema", "schema": rng.choice(huge_schemas(rng))},
    }
    frame = frame_of(message, encoding)
    batch = Batch("schema_huge", encoding, SESSION_START, response_wait_s=10.0)
    batch.frames = [frame] if frame is not None else []
    batch.cancel_responses = True
    return batch
