"""Deep nesting: arrays and objects nested deep, as whole frames, in fields and schemas."""

from __future__ import annotations

import random
from typing import Any

import msgpack

from loadtest.fuzz.cases import PLACEHOLDER, SESSION_START, Batch, FuzzContext, frame_of
from loadtest.fuzz.wire import OP_BINARY, OP_TEXT, Frame


def _nested_json(depth: int, kind: str) -> str:
    return "[" * depth + "]" * depth if kind == "array" else '{"a":' * depth + "1" + "}" * depth


def _nested_msgpack(depth: int, kind: str) -> bytes:
    return (b"\x91" * depth if kind == "array" else b"\x81\xa1a" * depth) + b"\xc0"


def deep_nesting(rng: random.Random, ctx: FuzzContext) -> Batch:
    """Arrays and objects nested deep, as the whole frame and inside fields."""
    encoding = rng.choice(("json", "msgpack"))
    batch = Batch("deep_nesting", encoding, SESSION_START)
    for _ in range(20):
        depth = rng.choice((32, 100, 200, 500, 1000, 3000, 10_000, 100_000))
        kind = rng.choice(("array", "object"))
        where = rng.choice(("frame", "id", "output", "schema", "parameters"))
        if encoding == "json":
            nest = _nested_json(depth, kind)
            wrapped = {
                "frame": nest,
                "id": '{"type":"ping","id":' + nest + "}",
                "output": '{"type":"tool.result","call_id":"c","output":' + nest + "}",
                "schema": '{"type":"response.create","input":"x","response_format":'
                '{"type":"json_schema","schema":{"type":"object","properties":{"a":'
                + nest
                + "}}}}",
                "parameters": '{"type":"session.update","tools":[{"name":"t","parameters":'
                + nest
                + "}]}",
            }[where]
            batch.frames.append(Frame(OP_TEXT, wrapped.encode()))
        else:
            nest_bytes = _nested_msgpack(min(depth, 4000), kind)
            shell = {
                "frame": None,
                "id": {"type": "ping", "id": PLACEHOLDER},
                "output": {"type": "tool.result", "call_id": "c", "output": PLACEHOLDER},
                "schema": {
                    "type": "response.create",
                    "input": "x",
                    "response_format": {"type": "json_schema", "schema": PLACEHOLDER},
                },
                "parameters": {
                    "type": "session.update",
                    "tools": [{"name": "t", "parameters": PLACEHOLDER}],
                },
            }[where]
            if shell is None:
                payload = nest_bytes
            else:
                packed = msgpack.packb(shell, use_bin_type=True)
                payload = packed.replace(b"\xa3" + PLACEHOLDER.encode(), nest_bytes)
            batch.frames.append(Frame(OP_BINARY, payload))
    # A schema nested deep in a valid shape (properties of properties ...).
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(rng.choice((60, 150, 400))):
        schema = {"type": "object", "properties": {"a": schema}}
    for message in (
        {"type": "response.create", "input": "x", "response_format": _format(schema)},
        {"type": "session.update", "tools": [{"name": "t", "parameters": schema}]},
    ):
        frame = frame_of(message, encoding)
        if frame is not None:
            batch.frames.append(frame)
    batch.response_wait_s = 3.0
    return batch


def _format(schema: Any) -> dict[str, Any]:
    return {"type": "json_schema", "schema": schema}
