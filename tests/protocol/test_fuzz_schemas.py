"""Fuzzing client schemas: compile succeeds or says ``invalid_schema``; nothing else.

Hypothesis builds arbitrary and hostile schemas (keywords with values of the
wrong type, references to anywhere, cycles, huge counts, deep nesting, numbers
that are not finite) and arbitrary values. Whatever it builds:

* :func:`compile_schema` returns, or raises ``ProtocolViolation(invalid_schema)``;
* a compiled schema's :meth:`problem` returns ``None`` or a short string, never
  raises;
* neither fetches, connects or opens anything (watched through audit hooks).
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.json_schema import LIMITS, SchemaLimits, compile_schema
from tests.protocol.io_audit import watch_io

_SUBSCHEMA = [
    "additionalProperties",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
]
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("$defs", "definitions", "properties", "patternProperties", "dependentSchemas")
_NUMBERS = [
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
]
_REFS = [
    "#",
    "#/",
    "#/$defs/a",
    "#/$defs/b",
    "#/properties/a",
    "#/items",
    "#/allOf/0",
    "#/nowhere",
    "#/$defs/a/properties/x",
    "#a",
    "#b",
    "a.json",
    "http://127.0.0.1:9/schema.json",
    "https://json-schema.org/draft/2020-12/schema",
    "file:///etc/passwd",
    "//127.0.0.1:9/x",
    "urn:example:a",
    "#/%24defs/a",
    "#/x~1y",
]
_IDS = ["", "a", "urn:example:a", "http://127.0.0.1:9/", "file:///tmp/", "#", "b.json"]
_DIALECTS = [
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-04/schema#",
    "https://json-schema.org/draft/2019-09/schema",
    "nonsense",
]
_TYPES = ["string", "integer", "number", "object", "array", "boolean", "null", "nope"]

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
)
json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)
counts = (
    st.integers(min_value=-2, max_value=5)
    | st.sampled_from([1000, 1001, 10_000, 200_000, 10**30])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=3)
)
patterns = st.sampled_from(["^a+$", "(a+)+$", "[", "\\d{2,}", "a" * 1001, "(?P<x>a)(?P=x)", ""])


def _member(schema: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[str, Any]]:
    """One keyword and a value for it: usually the right type, sometimes any JSON."""
    wrong = st.tuples(
        st.sampled_from([*_SUBSCHEMA, *_SUBSCHEMA_LISTS, *_SUBSCHEMA_MAPS, *_NUMBERS, "type"]),
        json_values,
    )
    return st.one_of(
        st.tuples(st.sampled_from(_SUBSCHEMA), schema),
        st.tuples(st.sampled_from(_SUBSCHEMA_LISTS), st.lists(schema, max_size=3)),
        st.tuples(
            st.sampled_from(_SUBSCHEMA_MAPS),
            st.dictionaries(st.sampled_from(["a", "b", "x", "$ref", "^a"]), schema, max_size=3),
        ),
        st.tuples(st.sampled_from(_NUMBERS), counts),
        st.tuples(
            st.sampled_from(["$ref", "$dynamicRef"]), st.sampled_from(_REFS) | st.text(max_size=6)
        ),
        st.tuples(st.sampled_from(["$id"]), st.sampled_from(_IDS)),
        st.tuples(
            st.sampled_from(["$anchor", "$dynamicAnchor"]), st.sampled_from(["a", "b", "1x"])
        ),
        st.tuples(st.just("$schema"), st.sampled_from(_DIALECTS)),
        st.tuples(
            st.just("type"), st.sampled_from(_TYPES) | st.lists(st.sampled_from(_TYPES), max_size=3)
        ),
        st.tuples(st.sampled_from(["enum", "const", "default"]), json_values),
        st.tuples(st.just("required"), st.lists(st.sampled_from(["a", "b", "x"]), max_size=3)),
        st.tuples(st.just("pattern"), patterns),
        st.tuples(st.just("uniqueItems"), st.booleans()),
        st.tuples(st.text(max_size=5), json_values),
        wrong,
    )


schemas = st.recursive(
    st.booleans() | st.just({}),
    lambda inner: st.lists(_member(inner), max_size=5).map(dict),
    max_leaves=25,
)


def _deep(levels: int, keyword: str) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    for _ in range(levels):
        schema = {keyword: [schema]} if keyword in _SUBSCHEMA_LISTS else {keyword: schema}
    return schema


hostile = schemas | st.builds(
    _deep,
    st.integers(min_value=20, max_value=200),
    st.sampled_from(["items", "not", "allOf", "properties"]),
)

_FAST = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _compile(schema: Any) -> Any:
    """The compiled schema or ``None`` (refused); any other exception fails the test."""
    try:
        return compile_schema(schema, "s")
    except ProtocolViolation as violation:
        assert violation.code is ErrorCode.INVALID_SCHEMA
        assert len(violation.message) <= 300
        return None


@_FAST
@given(hostile, st.lists(json_values, max_size=3))
def test_compile_and_validate_never_crash_nor_do_io(schema: Any, values: list[Any]) -> None:
    with watch_io() as seen:
        compiled = _compile(schema)
        if compiled is not None:
            for value in values:
                problem = compiled.problem(value)
                assert problem is None or (isinstance(problem, str) and len(problem) <= 300)
    assert seen == []


@settings(max_examples=150, deadline=None)
@given(schemas, st.integers(min_value=1, max_value=200))
def test_validation_stays_within_its_step_budget(schema: Any, levels: int) -> None:
    """A tiny budget is enough to stop any schema on a deep or wide value."""
    limits = SchemaLimits(validation_steps=50)
    try:
        compiled = compile_schema(schema, "s", limits)
    except ProtocolViolation:
        return
    wide: Any = [{"a": [1, "x", None], "b": {"c": 1.5}}] * levels
    deep: Any = 1
    for _ in range(levels):
        deep = [deep, {"a": deep}] if levels < 12 else [deep]
    for value in (wide, deep):
        problem = compiled.problem(value)
        assert problem is None or isinstance(problem, str)


@settings(max_examples=100, deadline=None)
@given(
    st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True, allow_infinity=True)
)
def test_numbers_of_any_size_in_schemas_and_values(bound: float, value: float) -> None:
    """``multipleOf`` and bounds with huge, tiny or non-finite numbers never crash."""
    schema = {"multipleOf": bound, "minimum": bound} if bound > 0 else {"maximum": bound}
    compiled = _compile(schema)
    if not math.isfinite(bound):
        assert compiled is None
    if compiled is not None:
        compiled.problem(value)
        compiled.problem(10**300)


def test_the_limits_are_what_the_docs_say() -> None:
    """docs/PROTOCOL.md quotes these numbers."""
    assert (LIMITS.depth, LIMITS.nodes, LIMITS.tools_nodes, LIMITS.text) == (
        64,
        2000,
        10_000,
        65_536,
    )
    assert (LIMITS.min_count, LIMITS.min_length, LIMITS.pattern_length) == (1000, 10_000, 1000)
    assert (LIMITS.instance_depth, LIMITS.validation_steps, LIMITS.in_place) == (60, 50_000, 2000)
