"""Client-given JSON Schemas (tool ``parameters``, ``response_format``): safe to compile and apply.

A schema comes from a client, so compiling it and validating against it must not
fetch anything, read anything, recurse without bound or take unbounded work:

* References resolve only inside the schema itself (``#``, ``#/$defs/x``, anchors,
  ``$id``\\s the document declares). The validator's registry refuses every
  retrieval, and :func:`compile_schema` resolves every reference once up front, so a
  reference that points outside is ``invalid_schema`` before anything runs.
* The document is bounded (:data:`LIMITS`) before any recursive code sees it, and
  ``minItems``-like counts are capped, so nothing a schema asks for outgrows a
  response's output budget by orders of magnitude.
* A chain of in-place references that never consumes any of the instance
  (``{"$ref": "#"}``, two ``$defs`` that ``allOf`` each other) could never finish;
  it is refused at compile time.
* Validation counts its steps and stops at :data:`SchemaLimits.validation_steps`; the
  instance's depth is bounded too. :meth:`CompiledSchema.problem` never raises: any
  failure is a problem string.
* Patterns (``pattern``, ``patternProperties``) run on RE2, in time linear in the
  text: ``^(a+)+$`` against 30 characters would otherwise backtrack for a minute on
  the event loop. A pattern RE2 cannot run (lookarounds, backreferences) is refused.

The validator itself lives in :mod:`protocol.schema_validator`, the reference walk
in :mod:`protocol.schema_references`; this module holds the limits and the checks
that run before any recursive code sees the document.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, NoReturn

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.json_value import exceeds_depth, safe_text
from protocol.schema_references import NESTED_DIALECT, nested_dialect, reference_problem
from protocol.schema_validator import (
    BudgetedValidator,
    StepsExhausted,
    crawled_registry,
    meta_problem,
    pattern_supported,
    step_budget,
)

__all__ = ["LIMITS", "CompiledSchema", "SchemaLimits", "compile_schema"]


@dataclass(frozen=True, slots=True)
class SchemaLimits:
    """What a client schema may be; past any of these it is ``invalid_schema``."""

    depth: int = 64
    """Nesting of objects and arrays in the schema document (about 32 schema levels)."""
    nodes: int = 2_000
    """Values (objects, arrays, strings, numbers...) in the schema document."""
    tools_nodes: int = 10_000
    """Values in the ``parameters`` of all of a session's tools together."""
    text: int = 65_536
    """Characters in all its keys and strings together."""
    min_count: int = 1_000
    """Largest ``minItems``, ``minProperties`` and ``minContains``."""
    min_length: int = 10_000
    """Largest ``minLength``."""
    pattern_length: int = 1_000
    """Longest ``pattern`` or ``patternProperties`` regular expression."""
    in_place: int = 2_000
    """Subschemas one place of a value can be checked against, counting every path of
    in-place references (``$ref``, ``allOf``…): shared definitions multiply."""
    instance_depth: int = 60
    """Nesting of a value validated against a schema (deeper: it does not match). Below the
    64 levels of a message, so every event that carries the value (at level 2) decodes."""
    validation_steps: int = 50_000
    """Keyword evaluations allowed for validating one value."""


LIMITS = SchemaLimits()

_DIALECTS = frozenset(
    {
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema",
    }
)
"""Root ``$schema`` values accepted (with or without a trailing ``#``); whatever it
says, the schema is read as Draft 2020-12."""

_COUNTS = ("minItems", "minProperties", "minContains")
_MESSAGE_CHARS = 300
_CACHED = 64
"""Compiled schemas (or refusals) kept by their exact text: clients send the same
``response_format`` with every request, and compiling a large one takes ~70 ms."""
_CACHED_TEXT = 262_144
_cache: OrderedDict[tuple[str, SchemaLimits, str], CompiledSchema | str] = OrderedDict()


class CompiledSchema:
    """A checked client schema, ready to validate values."""

    __slots__ = ("_limits", "_validator", "nodes", "schema")

    def __init__(self, schema: Any, validator: Any, limits: SchemaLimits, nodes: int) -> None:
        self.schema = schema
        """The schema as it is applied (a root ``$schema`` removed)."""
        self.nodes = nodes
        """Values in the schema document (what the limits count)."""
        self._validator = validator
        self._limits = limits

    def problem(self, value: Any) -> str | None:
        """Why ``value`` does not match, or ``None``; never raises."""
        limits = self._limits
        if exceeds_depth(value, limits.instance_depth):
            return f"(root): the value nests deeper than {limits.instance_depth} levels"
        try:
            with step_budget(limits.validation_steps):
                errors = list(self._validator.iter_errors(value))
        except StepsExhausted:
            return f"(root): validation took more than {limits.validation_steps} steps"
        except RecursionError:
            return "(root): validation recursed too deeply"
        except Exception as exc:  # a schema the checks let through must not escape as a crash
            return f"(root): the schema could not be applied ({type(exc).__name__})"
        if not errors:
            return None
        first = min(errors, key=lambda e: [str(p) for p in e.absolute_path])
        where = "/".join(str(p) for p in first.absolute_path) or "(root)"
        return _clip(f"{where}: {first.message}")


def compile_schema(schema: Any, what: str, limits: SchemaLimits = LIMITS) -> CompiledSchema:
    """A validator for a client-given JSON Schema, or ``ProtocolViolation(invalid_schema)``.

    ``what`` names the schema in messages (``parameters of get_weather``). The same
    schema (same text, key order included) compiles once; the result is immutable
    and shared.
    """
    # The size limits first: a schema far past them is refused before it is serialised.
    nodes = _check_size(schema, what, limits)
    try:
        text = json.dumps(schema, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return _compile(schema, what, limits, nodes)  # not plain JSON: refused below, uncached
    if len(text) > _CACHED_TEXT:
        return _compile(schema, what, limits, nodes)  # the cache's memory stays bounded
    key = (what, limits, text)
    cached = _cache.get(key)
    if cached is None:
        try:
            cached = _compile(schema, what, limits, nodes)
        except ProtocolViolation as violation:
            cached = violation.message
        _cache[key] = cached
        if len(_cache) > _CACHED:
            _cache.popitem(last=False)
    _cache.move_to_end(key)
    if isinstance(cached, str):
        raise ProtocolViolation(ErrorCode.INVALID_SCHEMA, cached)
    return cached


def _compile(schema: Any, what: str, limits: SchemaLimits, nodes: int) -> CompiledSchema:
    """Compile a schema that passed :func:`_check_size` (``nodes`` values)."""
    if not isinstance(schema, dict | bool):
        _invalid(f"{what} must be an object")
    if isinstance(schema, dict) and "$schema" in schema:
        dialect = schema["$schema"]
        if not isinstance(dialect, str) or dialect.rstrip("#") not in _DIALECTS:
            _invalid(f"{what}: $schema must be json schema 2020-12, 2019-09 or draft-07")
        schema = {k: v for k, v in schema.items() if k != "$schema"}
    problem = meta_problem(schema)
    if problem is not None:
        _invalid(f"{what} {problem}")
    if nested_dialect(schema):
        _invalid(f"{what} {NESTED_DIALECT}")
    registry = crawled_registry(schema)
    problem = reference_problem(schema, registry, limits.in_place)
    if problem is not None:
        _invalid(f"{what} {problem}")
    return CompiledSchema(schema, BudgetedValidator(schema, registry=registry), limits, nodes)


# -- checks ------------------------------------------------------------------------------


def _invalid(message: str) -> NoReturn:
    raise ProtocolViolation(ErrorCode.INVALID_SCHEMA, _clip(message))


def _clip(message: str) -> str:
    """A message short enough for an event, and sendable (a value's key may hold a lone
    surrogate: it is written as its escape)."""
    return safe_text(message, _MESSAGE_CHARS)


def _check_size(schema: Any, what: str, limits: SchemaLimits) -> int:
    """Depth, node count, text size and numbers, in one iterative walk, before anything
    recurses. A container is counted whole before its members are looked at, so a schema
    far past the limits is refused after a look at its first containers, not a full walk.

    Returns the node count.
    """
    nodes = 1
    text = 0
    work: list[tuple[Any, int]] = [(schema, 1)]
    while work:
        item, depth = work.pop()
        if isinstance(item, dict | list):
            if depth > limits.depth:
                _invalid(f"{what} nests deeper than {limits.depth} levels (the limit)")
            nodes += len(item)
            if nodes > limits.nodes:
                _invalid(f"{what} has more than {limits.nodes} values (the limit)")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    _invalid(f"{what} has a key that is not a string")
                text += len(key)
                _check_keyword(key, child, what, limits)
                work.append((child, depth + 1))
        elif isinstance(item, list):
            work.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            text += len(item)
        elif isinstance(item, float) and not math.isfinite(item):
            _invalid(f"{what} holds a number that is not finite")
        elif item is not None and not isinstance(item, bool | int | float):
            _invalid(f"{what} holds a value that is not json ({type(item).__name__})")
        if text > limits.text:
            _invalid(f"{what} has more than {limits.text} characters of text (the limit)")
    return nodes


def _check_keyword(key: str, value: Any, what: str, limits: SchemaLimits) -> None:
    """Caps on the numbers that size a minimal instance, and on patterns.

    Applied wherever the key appears (also as a property name, which is stricter
    than needed and harmless).
    """
    if key == "pattern" and isinstance(value, str):
        patterns = [value]
    elif key == "patternProperties" and isinstance(value, dict):
        patterns = [p for p in value if isinstance(p, str)]
    else:
        patterns = []
    for pattern in patterns:
        if len(pattern) > limits.pattern_length:
            _invalid(f"{what}: a pattern is longer than {limits.pattern_length} characters")
        if not pattern_supported(pattern):
            _invalid(
                f"{what}: pattern {pattern[:60]!r} is not supported (patterns run in linear"
                " time: no lookarounds, backreferences or repetition counts over 1000)"
            )
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    if key in _COUNTS and value > limits.min_count:
        _invalid(f"{what}: {key} {value} is over the limit of {limits.min_count}")
    if key == "minLength" and value > limits.min_length:
        _invalid(f"{what}: minLength {value} is over the limit of {limits.min_length}")
