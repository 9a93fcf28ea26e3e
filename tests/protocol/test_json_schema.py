"""Client schemas: compiled without I/O, bounded in size and work, never crashing.

Pure tests (no event loop, no sockets): Python's audit hooks show that nothing
is fetched or opened (the server tests bait a real HTTP server and file too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from referencing import Registry

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.json_schema import LIMITS, SchemaLimits, compile_schema
from tests.protocol.io_audit import watch_io


def refused(schema: Any, limits: SchemaLimits = LIMITS) -> str:
    """The ``invalid_schema`` message for ``schema`` (fails if it compiles)."""
    with pytest.raises(ProtocolViolation) as caught:
        compile_schema(schema, "s", limits)
    assert caught.value.code is ErrorCode.INVALID_SCHEMA
    return caught.value.message


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(levels):
        schema = {"type": "array", "items": schema}
    return schema


def nested_value(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


# -- references ----------------------------------------------------------------


def test_outside_references_are_refused_without_io(tmp_path: Path) -> None:
    secret = tmp_path / "schema.json"
    secret.write_text('{"enum": ["file-secret"]}')
    url = "http://127.0.0.1:9/schema.json"
    schemas = [
        {"$ref": url},
        {"$ref": secret.as_uri()},
        {"properties": {"a": {"$ref": url + "#/enum"}}},
        {"$id": url, "$ref": "other.json"},
        {"$dynamicRef": url},
        # A pointer into an unknown keyword, whose content refers outside.
        {"$ref": "#/x/y", "x": {"y": {"$ref": secret.as_uri()}}},
        # The meta-schema is not part of the client's schema either.
        {"$ref": "https://json-schema.org/draft/2020-12/schema"},
    ]
    with watch_io() as seen:
        for schema in schemas:
            message = refused(schema)
            assert "does not resolve inside the schema" in message
            assert "file-secret" not in message
    assert seen == []


def test_the_audit_hook_sees_a_fetch(tmp_path: Path) -> None:
    """The check above could fail: an open of the file is seen."""
    secret = tmp_path / "schema.json"
    secret.write_text("{}")
    with watch_io() as seen:
        secret.read_text()
    assert seen == [f"open {secret.resolve()}"]


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        ({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"}, 3, "x"),
        ({"$defs": {"n": {"$anchor": "num", "type": "integer"}}, "$ref": "#num"}, 3, "x"),
        ({"items": [{"type": "integer"}], "$ref": "#/items/0"}, [], 5),
        (
            {
                "$id": "https://example.com/root",
                "$defs": {"n": {"$id": "num", "type": "integer"}},
                "$ref": "https://example.com/num",
            },
            3,
            "x",
        ),
        (
            {
                "$defs": {
                    "tree": {
                        "type": "object",
                        "properties": {
                            "kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}}
                        },
                    }
                },
                "$ref": "#/$defs/tree",
            },
            {"kids": [{"kids": []}]},
            {"kids": [{"kids": 1}]},
        ),
    ],
    ids=["pointer", "anchor", "into-an-array", "internal-id", "recursive"],
)
def test_references_inside_the_schema_resolve(schema: Any, good: Any, bad: Any) -> None:
    if "items" in schema and isinstance(schema["items"], list):
        refused(schema)  # not 2020-12 (items is a schema); the pointer is fine
        return
    compiled = compile_schema(schema, "s")
    assert compiled.problem(good) is None
    assert compiled.problem(bad) is not None


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"allOf": [{"$ref": "#"}]},
        {"not": {"anyOf": [{"$ref": "#"}]}},
        {
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"oneOf": [{"$ref": "#/$defs/a"}]}},
            "$ref": "#/$defs/a",
        },
        {"$dynamicAnchor": "m", "$dynamicRef": "#m"},
        {"if": {"$ref": "#"}},
        {"dependentSchemas": {"a": {"$ref": "#"}}},
    ],
)
def test_cycles_that_consume_nothing_are_refused(schema: Any) -> None:
    assert "refers to itself" in refused(schema)


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        ({"$ref": "#/nope"}, "does not resolve"),
        ({"$ref": "#nope"}, "does not resolve"),
        ({"$ref": "#/required", "required": ["a"]}, "does not point at a schema"),
        ({"$ref": "#/x", "x": {"properties": 5}}, "not a valid json schema"),
        ({"$schema": "http://json-schema.org/draft-04/schema#"}, "$schema"),
        (
            {"properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}},
            "only at the root",
        ),
        # Another dialect below the root is refused before its rules read the subschema
        # (draft-04's break on a boolean inside it: a TypeError, not an in-band error).
        (
            {
                "additionalProperties": {
                    "allOf": [False],
                    "$schema": "http://json-schema.org/draft-04/schema#",
                }
            },
            "only at the root",
        ),
    ],
)
def test_broken_references_and_dialects_are_refused(schema: Any, named: str) -> None:
    assert named in refused(schema)


def test_a_root_dialect_is_accepted_and_dropped() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer"}
    compiled = compile_schema(schema, "s")
    assert "$schema" not in compiled.schema
    assert compiled.problem(1) is None
    assert compiled.problem("1") is not None


# -- limits ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        (nested(150), "nests deeper than 64 levels"),
        (nested(1000), "nests deeper than 64 levels"),
        ({"enum": list(range(3000))}, "more than 2000 values"),
        ({"enum": ["x" * 70_000]}, "characters of text"),
        ({"type": "array", "minItems": 200_000}, "minItems 200000"),
        ({"type": "object", "minProperties": 5000}, "minProperties 5000"),
        ({"contains": {}, "minContains": 1e9}, "minContains"),
        ({"type": "string", "minLength": 1_000_000}, "minLength 1000000"),
        ({"type": "string", "pattern": "a" * 2000}, "pattern is longer"),
        ({"patternProperties": {"a" * 2000: {}}}, "pattern is longer"),
        ({"const": float("inf")}, "not finite"),
        ({"const": b"bytes"}, "not json"),
        ({1: "x"}, "not a string"),
        ([], "must be an object"),
    ],
)
def test_limits_are_named(schema: Any, named: str) -> None:
    assert named in refused(schema)


def test_limits_just_within_compile() -> None:
    compile_schema(nested(31), "s")  # 63 levels of objects and arrays
    compile_schema({"type": "array", "minItems": 1000}, "s")


def test_a_deep_value_does_not_match() -> None:
    compiled = compile_schema(
        {"$defs": {"a": {"items": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}, "s"
    )
    assert compiled.problem(nested_value(60)) is None
    assert "nests deeper" in (compiled.problem(nested_value(5000)) or "")


def test_validation_work_is_bounded() -> None:
    """Each alternative fails only at the leaf: exponential without a bound."""
    schema = {
        "$defs": {
            "t": {
                "anyOf": [
                    {"type": "array", "items": {"$ref": "#/$defs/t"}, "minItems": 2},
                    {"type": "array", "items": {"$ref": "#/$defs/t"}},
                ]
            }
        },
        "$ref": "#/$defs/t",
    }
    compiled = compile_schema(schema, "s", SchemaLimits(validation_steps=5_000))
    problem = compiled.problem(nested_value(40))
    assert problem is not None and "more than 5000 steps" in problem


def test_unique_items_of_objects_count_as_quadratic() -> None:
    compiled = compile_schema({"uniqueItems": True}, "s", SchemaLimits(validation_steps=10_000))
    assert compiled.problem([{"a": i} for i in range(100)]) is None
    assert "steps" in (compiled.problem([{"a": i} for i in range(1000)]) or "")


def test_messages_are_short() -> None:
    compiled = compile_schema({"enum": ["x" * 5000]}, "s")
    problem = compiled.problem("y")
    assert problem is not None and len(problem) <= 300


# -- patterns ------------------------------------------------------------------------


def test_patterns_run_in_linear_time() -> None:
    """``^(a+)+$`` backtracks exponentially in Python's ``re`` (30 characters take a
    minute, 60 would take ages): on RE2 even a long value is checked at once, through
    ``pattern``, ``patternProperties`` and ``additionalProperties`` alike."""
    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}},
        "patternProperties": {"^(b+)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    compiled = compile_schema(schema, "s")
    assert compiled.problem({"s": "a" * 60}) is None
    assert "does not match" in (compiled.problem({"s": "a" * 60 + "!"}) or "")
    assert compiled.problem({"b" * 60: 1}) is None
    assert compiled.problem({"b" * 60 + "!": 1}) is not None
    assert compiled.problem({"b" * 60: "x"}) is not None


@pytest.mark.parametrize("pattern", ["(?=a)b", "(a)\\1", "a{1001}", "(?<!x)y"])
def test_patterns_that_need_backtracking_are_refused(pattern: str) -> None:
    assert "is not supported" in refused({"type": "string", "pattern": pattern})
    assert "is not supported" in refused({"patternProperties": {pattern: {}}})


def shared_chain(levels: int) -> dict[str, Any]:
    """Each definition refers to the next twice, in place: 2**levels paths to the end."""
    defs: dict[str, Any] = {
        f"a{i}": {"$ref": f"#/$defs/a{i + 1}", "$dynamicRef": f"#/$defs/a{i + 1}"}
        for i in range(levels)
    }
    defs[f"a{levels}"] = {"type": "object"}
    return {"unevaluatedProperties": False, "$defs": defs, "$ref": "#/$defs/a0"}


def test_shared_in_place_references_are_bounded() -> None:
    """jsonschema's unevaluatedProperties walks every path of in-place references, with
    no keyword evaluated on the way: 30 levels took forever (before: a stalled worker)."""
    assert "applies more than 2000 subschemas" in refused(shared_chain(30))
    compile_schema(shared_chain(9), "s")  # 2**10 paths: fine


def test_validation_counts_the_walks_keywords_do_not_see() -> None:
    """Past the compile check (limit raised), the step budget still stops that walk."""
    limits = SchemaLimits(in_place=10**9, validation_steps=10_000)
    compiled = compile_schema(shared_chain(28), "s", limits)
    assert "more than 10000 steps" in (compiled.problem({"x": 1}) or "")


def test_validation_never_crawls_the_document_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """References to ``$id``\\s found by crawling: crawled once, at compile time. (Before,
    each lookup crawled the whole document: 200 items x 10 references over 300
    definitions took 7 s.)"""
    definitions = {
        f"d{i}": {"$id": f"https://example.com/d{i}", "type": "integer"} for i in range(300)
    }
    refs = [{"$ref": f"https://example.com/d{i}"} for i in range(0, 300, 30)]
    schema = {
        "$id": "https://example.com/root",
        "$defs": definitions,
        "type": "array",
        "items": {"anyOf": refs},
    }
    compiled = compile_schema(schema, "s")
    crawls = 0
    crawl = Registry.crawl

    def counted(self: Registry[Any]) -> Registry[Any]:
        nonlocal crawls
        crawls += 1
        return crawl(self)

    monkeypatch.setattr(Registry, "crawl", counted)
    assert compiled.problem([1, 2, 3]) is None
    assert compiled.problem(["a"] * 20) is not None
    assert crawls == 0


def test_the_same_schema_compiles_once() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    first = compile_schema(schema, "s")
    assert compile_schema(dict(schema), "s") is first
    reordered = {"properties": {"n": {"type": "integer"}}, "type": "object"}
    assert compile_schema(reordered, "s") is not first  # key order shapes samples
    assert refused({"$ref": "#"}) == refused({"$ref": "#"})


class _Untouchable(dict):  # type: ignore[type-arg]
    """A subschema whose members must never be looked at."""

    def items(self):  # type: ignore[no-untyped-def]
        raise AssertionError("a member of an oversized schema was walked")


def test_a_schema_past_the_value_limit_is_refused_before_its_members_are_walked() -> None:
    schema = {"type": "object", "properties": {f"p{i}": _Untouchable() for i in range(3000)}}
    with pytest.raises(ProtocolViolation, match="more than 2000 values"):
        compile_schema(schema, "response_format")


def test_every_value_a_schema_accepts_fits_in_an_event_a_client_can_decode() -> None:
    from protocol.encoding import codec_for
    from protocol.events import Event

    def nested(levels: int) -> Any:
        value: Any = 1
        for _ in range(levels - 1):
            value = [value]
        return value

    compiled = compile_schema({}, "response_format")
    deepest = max(n for n in range(1, 80) if compiled.problem(nested(n)) is None)
    event = Event("response.output_json.done", {"response_id": "resp_1", "value": nested(deepest)})
    event.seq = 1
    for subprotocol in ("wsserver.v1.json", "wsserver.v1.msgpack"):
        codec = codec_for(subprotocol)
        assert codec.decode(codec.encode_event(event))["value"] == nested(deepest)
