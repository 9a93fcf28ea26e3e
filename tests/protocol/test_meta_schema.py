"""The flattened 2020-12 meta-schema accepts and refuses exactly what the official one does."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from protocol.meta_schema import META_VALIDATOR

OFFICIAL = Draft202012Validator(
    Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER
)

KEYWORDS = [
    "type", "properties", "items", "prefixItems", "required", "enum", "const", "minItems",
    "maxLength", "pattern", "$defs", "$ref", "anyOf", "oneOf", "allOf", "not", "if", "then",
    "additionalProperties", "unevaluatedProperties", "dependentRequired", "dependentSchemas",
    "contains", "minContains", "propertyNames", "patternProperties", "format", "$anchor",
    "definitions", "dependencies", "contentSchema", "multipleOf", "uniqueItems", "default",
]  # fmt: skip

leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(["string", "object", "array", "integer", "x", "^a+$", "(", "#/$defs/a"]),
)
values = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from([*KEYWORDS, "a", "b"]), inner, max_size=4),
    ),
    max_leaves=25,
)


def valid(validator: Draft202012Validator, schema: Any) -> bool:
    return next(validator.iter_errors(schema), None) is None


@settings(max_examples=600, deadline=None)
@given(values)
def test_same_verdict_as_the_official_meta_schema(schema: Any) -> None:
    assert valid(META_VALIDATOR, schema) == valid(OFFICIAL, schema)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": 5}}},
        {"prefixItems": 5},
        {"minItems": "x"},
        {"items": {"items": {"items": {"type": "nope"}}}},
        {"$defs": {"a": {"pattern": "("}}},
        {"dependentSchemas": {"a": 3}},
        {"unevaluatedProperties": {"minLength": -1}},
        {"definitions": {"a": {"type": []}}},
    ],
)
def test_refuses_what_the_official_meta_schema_refuses(schema: Any) -> None:
    assert not valid(OFFICIAL, schema)
    assert not valid(META_VALIDATOR, schema)
