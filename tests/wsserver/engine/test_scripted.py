"""The scripted output's schema-driven values: valid where it can be, bounded always.

A script never holds more than the request's output budget (plus one chunk, so
the engine knows the answer was cut), whatever the schema asks for: the work
of building it is bounded by ``max_output_tokens``, not by ``minItems``.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.conversation import Turn
from protocol.errors import ProtocolViolation
from protocol.json_schema import compile_schema
from tests.protocol.test_fuzz_schemas import schemas
from wsserver.engine.base import GenerationRequest
from wsserver.engine.scripted import sample, script_for

# Within every schema limit, and still a billion integers if built whole.
CUBE: dict[str, Any] = {
    "type": "array",
    "minItems": 1000,
    "items": {
        "type": "array",
        "minItems": 1000,
        "items": {"type": "array", "minItems": 1000, "items": {"type": "integer"}},
    },
}


def structured(schema: dict[str, Any], max_tokens: int) -> GenerationRequest:
    return GenerationRequest("r1", [Turn("user", "json")], max_tokens, response_format=schema)


def tool_request(text: str, parameters: dict[str, Any], max_tokens: int) -> GenerationRequest:
    tool = {"name": "fill", "parameters": parameters}
    return GenerationRequest("r1", [Turn("user", text)], max_tokens, tools=(tool,))


@pytest.mark.parametrize("max_tokens", [1, 50, 4096])
def test_a_huge_document_is_cut_at_the_output_budget(max_tokens: int) -> None:
    """Nested ``minItems``: the script stops one chunk past the budget."""
    script = script_for(structured(CUBE, max_tokens), seed=7)
    assert script is not None
    assert len(script) == max_tokens + 1
    assert sum(chunk.tokens for chunk in script) == max_tokens + 1


def test_many_calls_are_cut_at_the_output_budget() -> None:
    """A prompt that names a tool a thousand times makes no more calls than fit."""
    request = tool_request("call fill " * 1000, CUBE, 30)
    script = script_for(request, seed=3)
    assert script is not None
    assert len(script) <= 31


def test_a_sample_is_bounded_by_its_budget() -> None:
    """The sample itself stops growing once its budget is spent."""
    value = sample(CUBE, seed=1, budget=10_000)
    assert len(json.dumps(value)) < 20_000


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 4}}},
        {"type": "object", "properties": {"n": {"type": "number", "minimum": 1e300}}},
        {"enum": []},
        {"type": []},
        {"type": "array", "maxItems": 1, "items": {"type": "boolean"}},
        {"$ref": "#"},
        {"$ref": "#/$defs/nowhere"},
        {"properties": "not a dict"},
    ],
)
def test_odd_schemas_never_break_the_sampler(schema: dict[str, Any]) -> None:
    """Whatever the schema (even one the compile step would refuse), sampling works."""
    script = script_for(structured(schema, 100), seed=11)
    assert script is not None
    json.loads("".join(chunk.text for chunk in script))


def test_internal_references_are_followed() -> None:
    """A schema built from ``$defs`` (as model libraries write them) gets a valid sample."""
    schema = {
        "$defs": {
            "point": {
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["x", "y"],
            }
        },
        "type": "object",
        "properties": {"points": {"type": "array", "items": {"$ref": "#/$defs/point"}}},
        "required": ["points"],
    }
    value = sample(schema, seed=5)
    jsonschema.validate(value, schema)
    assert len(value["points"]) == 2


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas, st.integers(min_value=1, max_value=300), st.integers(min_value=0, max_value=99))
def test_any_accepted_schema_gives_a_bounded_document(
    schema: Any, max_tokens: int, seed: int
) -> None:
    """For every schema the compile step accepts: at most one chunk past the budget, and
    a document that is whole JSON whenever it fits."""
    try:
        compiled = compile_schema(schema, "s")
    except ProtocolViolation:
        return
    script = script_for(structured(compiled.schema, max_tokens), seed=seed)
    assert script is not None
    assert len(script) <= max_tokens + 1
    if len(script) <= max_tokens:
        json.loads("".join(chunk.text for chunk in script))
