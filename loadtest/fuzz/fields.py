"""Valid messages of every client type, and every field path in them to break.

The fuzzer starts from one valid message per type in ``protocol.messages``
(every optional field set) and replaces one field at a time: with a value of
the wrong type, a lone surrogate, a deep nest. :func:`uncovered_fields` lists
model fields missing from these bases, so a field added to the protocol and
not here shows in the report instead of going unfuzzed.
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from protocol import messages

_TOOL = {"name": "t", "description": "a tool", "parameters": {"type": "object"}}

BASE_MESSAGES: dict[str, dict[str, Any]] = {
    "session.start": {
        "type": "session.start",
        "id": "r",
        "instructions": "be brief",
        "settings": {"max_output_tokens": 8, "tool_timeout_ms": 1000, "tool_rounds": "client"},
        "audio": {
            "sample_rate": 16000,
            "output": False,
            "turn_detection": {
                "type": "manual",
                "threshold": 0.5,
                "prefix_padding_ms": 300,
                "silence_duration_ms": 500,
                "create_response": False,
                "interrupt_response": True,
                "false_interruption_ms": 200,
            },
        },
        "tools": [_TOOL],
    },
    "session.update": {
        "type": "session.update",
        "id": "r",
        "tools": [_TOOL],
        "instructions": "be brief",
        "audio": {
            "sample_rate": 16000,
            "output": False,
            "turn_detection": {
                "type": "server_vad",
                "threshold": 0.5,
                "prefix_padding_ms": 300,
                "silence_duration_ms": 500,
                "create_response": False,
                "interrupt_response": True,
                "false_interruption_ms": 200,
            },
        },
        "tool_rounds": "client",
    },
    "session.resume": {
        "type": "session.resume",
        "id": "r",
        "session_id": "sess_x",
        "resume_token": "tok",
        "last_seq": 0,
    },
    "input.text": {"type": "input.text", "id": "r", "text": "hi"},
    "response.create": {
        "type": "response.create",
        "id": "r",
        "input": "hi",
        "max_output_tokens": 4,
        "response_format": {"type": "json_schema", "schema": {"type": "object"}, "name": "n"},
        "instructions": "be brief",
        "tools": [_TOOL],
        "audio_output": False,
    },
    "response.continue": {
        "type": "response.continue",
        "id": "r",
        "response_id": "resp_1",
        "max_output_tokens": 4,
    },
    "response.interrupt": {
        "type": "response.interrupt",
        "id": "r",
        "response_id": "resp_1",
        "rendered_chars": 1,
        "played_ms": 1,
    },
    "response.cancel": {"type": "response.cancel", "id": "r", "response_id": "resp_1"},
    "input_audio.commit": {"type": "input_audio.commit", "id": "r"},
    "input_audio.clear": {"type": "input_audio.clear", "id": "r"},
    "output_audio.played": {
        "type": "output_audio.played",
        "id": "r",
        "response_id": "resp_1",
        "played_ms": 10,
    },
    "tool.result": {
        "type": "tool.result",
        "id": "r",
        "call_id": "call_x",
        "output": {"a": [1, "b"]},
        "error": "e",
    },
    "ack": {"type": "ack", "id": "r", "seq": 0},
    "ping": {"type": "ping", "id": "r"},
}

Path = tuple[str | int, ...]


def field_paths(value: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every key and list index below ``value`` (depth first), never the root."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from field_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from field_paths(item, (*prefix, index))


def string_paths(value: Any) -> list[Path]:
    """The paths whose value is a string."""
    return [p for p in field_paths(value) if isinstance(get_path(value, p), str)]


def get_path(value: Any, path: Path) -> Any:
    """The value at ``path``."""
    for step in path:
        value = value[step]
    return value


def replaced(message: dict[str, Any], path: Path, new: Any) -> dict[str, Any]:
    """A deep copy of ``message`` with the value at ``path`` replaced."""
    copied = copy.deepcopy(message)
    target: Any = copied
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return copied


def renamed_key(message: dict[str, Any], path: Path, new_key: str) -> dict[str, Any]:
    """A deep copy with the key at ``path`` (a dict key) renamed to ``new_key``."""
    copied = copy.deepcopy(message)
    target: Any = copied
    for step in path[:-1]:
        target = target[step]
    if isinstance(target, dict):
        target[new_key] = target.pop(path[-1])
    return copied


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _model_fields(model: type[BaseModel], prefix: str) -> Iterator[str]:
    for name, info in model.model_fields.items():
        key = info.alias or name
        yield f"{prefix}{key}"
        for sub in _models_in(info.annotation):
            yield from _model_fields(sub, f"{prefix}{key}.")


def uncovered_fields() -> list[str]:
    """Fields of the protocol's message models that no base message sets (nor its type)."""
    missing: list[str] = []
    for model in _models_in(messages.ClientMessage):
        type_field = model.model_fields["type"]
        kind = typing.get_args(type_field.annotation)[0]
        base = BASE_MESSAGES.get(kind)
        if base is None:
            missing.append(f"{kind} (whole message)")
            continue
        have = {".".join(str(s) for s in p if not isinstance(s, int)) for p in field_paths(base)}
        missing += [f"{kind}: {f}" for f in _model_fields(model, "") if f not in have]
    return missing
