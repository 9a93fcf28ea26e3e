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
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NoReturn

import jsonschema._keywords
import jsonschema._utils
import re2  # type: ignore[import-untyped]
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation

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
    instance_depth: int = 64
    """Nesting of a value validated against a schema (deeper: it does not match)."""
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
# Keywords that apply a subschema to the same instance location: a cycle through
# these alone never reaches a leaf of the instance.
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MANY = ("allOf", "anyOf", "oneOf")
_REFERENCES = ("$ref", "$dynamicRef")
_MESSAGE_CHARS = 300


class _OverBudget(Exception):
    """Validation ran out of steps."""


_steps_left: ContextVar[list[int] | None] = ContextVar("schema_steps_left", default=None)


def _spend(steps: int) -> None:
    left = _steps_left.get()
    if left is None:
        return
    left[0] -= steps
    if left[0] < 0:
        raise _OverBudget


_Keyword = Callable[[Validator, Any, Any, Any], Iterator[Any] | None]


def _counted(keyword: _Keyword) -> _Keyword:
    def count(validator: Validator, value: Any, instance: Any, schema: Any) -> Any:
        _spend(1)
        return keyword(validator, value, instance, schema)

    return count


def _counted_unique(keyword: _Keyword) -> _Keyword:
    # Unique objects or arrays are compared pairwise: quadratic in the array.
    def count(validator: Validator, value: Any, instance: Any, schema: Any) -> Any:
        if isinstance(instance, list):
            nested = any(isinstance(item, dict | list) for item in instance)
            _spend(len(instance) ** 2 // 2 if nested else len(instance))
        return keyword(validator, value, instance, schema)

    return count


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is an answer to the client, not a log line


@functools.lru_cache(maxsize=1024)
def _linear(pattern: str) -> Any:
    """``pattern`` compiled for RE2; raises ``re2.error`` for what RE2 cannot run."""
    return re2.compile(pattern, _RE2_OPTIONS)


class _LinearSearch:
    """Stands in for ``re`` in jsonschema's keyword modules.

    jsonschema calls ``re.search`` for ``pattern``, ``patternProperties`` and, through
    them, ``additionalProperties`` and ``unevaluatedProperties``. While one of our
    validations runs (a step budget is set), those searches go to RE2; any other
    caller in the process keeps Python's ``re``.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)

    def search(self, pattern: Any, string: Any, flags: int = 0) -> Any:
        if _steps_left.get() is None or flags or not isinstance(pattern, str):
            return re.search(pattern, string, flags)
        return _linear(pattern).search(string)


for _module in (jsonschema._keywords, jsonschema._utils):
    if getattr(_module, "re", None) is re:
        setattr(_module, "re", _LinearSearch())  # noqa: B010 (a private module's attribute)


_BudgetedValidator: Any = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    {
        name: (_counted_unique if name == "uniqueItems" else _counted)(keyword)
        for name, keyword in Draft202012Validator.VALIDATORS.items()
    },
)


def _refuse(uri: str) -> NoReturn:
    # Never a network or file system access: only the schema's own resources resolve.
    raise LookupError(f"{uri} is not part of the schema")


def _counted_evolve(evolve: Callable[..., Any]) -> Callable[..., Any]:
    # Every descent into a subschema evolves a validator, also inside jsonschema's own
    # helpers for unevaluatedProperties/Items, which call no keyword function.
    def count(self: Any, **changes: Any) -> Any:
        _spend(1)
        return evolve(self, **changes)

    return count


_BudgetedValidator.evolve = _counted_evolve(_BudgetedValidator.evolve)

_REGISTRY: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]


class CompiledSchema:
    """A checked client schema, ready to validate values."""

    __slots__ = ("_limits", "_validator", "nodes", "schema")

    def __init__(
        self, schema: dict[str, Any], validator: Any, limits: SchemaLimits, nodes: int
    ) -> None:
        self.schema = schema
        """The schema as it is applied (a root ``$schema`` removed)."""
        self.nodes = nodes
        """Values in the schema document (what the limits count)."""
        self._validator = validator
        self._limits = limits

    def problem(self, value: Any) -> str | None:
        """Why ``value`` does not match, or ``None``; never raises."""
        limits = self._limits
        if _depth_over(value, limits.instance_depth):
            return f"(root): the value nests deeper than {limits.instance_depth} levels"
        token = _steps_left.set([limits.validation_steps])
        try:
            errors = list(self._validator.iter_errors(value))
        except _OverBudget:
            return f"(root): validation took more than {limits.validation_steps} steps"
        except RecursionError:
            return "(root): validation recursed too deeply"
        except Exception as exc:  # a schema the checks let through must not escape as a crash
            return f"(root): the schema could not be applied ({type(exc).__name__})"
        finally:
            _steps_left.reset(token)
        if not errors:
            return None
        first = min(errors, key=lambda e: [str(p) for p in e.absolute_path])
        where = "/".join(str(p) for p in first.absolute_path) or "(root)"
        return _clip(f"{where}: {first.message}")


def compile_schema(schema: Any, what: str, limits: SchemaLimits = LIMITS) -> CompiledSchema:
    """A validator for a client-given JSON Schema, or ``ProtocolViolation(invalid_schema)``.

    ``what`` names the schema in messages (``parameters of get_weather``).
    """
    if not isinstance(schema, dict | bool):
        _invalid(f"{what} must be an object")
    nodes = _check_size(schema, what, limits)
    if isinstance(schema, dict) and "$schema" in schema:
        dialect = schema["$schema"]
        if not isinstance(dialect, str) or dialect.rstrip("#") not in _DIALECTS:
            _invalid(f"{what}: $schema must be json schema 2020-12, 2019-09 or draft-07")
        schema = {k: v for k, v in schema.items() if k != "$schema"}
    _check_meta(schema, what)
    registry = _crawled(schema)
    _check_references(schema, what, limits, registry)
    validator = _BudgetedValidator(schema, registry=registry)
    return CompiledSchema(schema if isinstance(schema, dict) else {}, validator, limits, nodes)


# -- checks ------------------------------------------------------------------------------


def _invalid(message: str) -> NoReturn:
    raise ProtocolViolation(ErrorCode.INVALID_SCHEMA, _clip(message))


def _clip(message: str) -> str:
    if len(message) <= _MESSAGE_CHARS:
        return message
    return message[: _MESSAGE_CHARS - 3] + "..."


def _depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` (iterative)."""
    work: list[tuple[Any, int]] = [(value, 1)]
    while work:
        item, depth = work.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        work.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _check_size(schema: Any, what: str, limits: SchemaLimits) -> int:
    """Depth, node count, text size and numbers, iteratively, before anything recurses.

    Returns the node count.
    """
    if _depth_over(schema, limits.depth):
        _invalid(f"{what} nests deeper than {limits.depth} levels (the limit)")
    nodes = text = 0
    work: list[Any] = [schema]
    while work:
        item = work.pop()
        nodes += 1
        if nodes > limits.nodes:
            _invalid(f"{what} has more than {limits.nodes} values (the limit)")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    _invalid(f"{what} has a key that is not a string")
                text += len(key)
                _check_keyword(key, child, what, limits)
                work.append(child)
        elif isinstance(item, list):
            work.extend(item)
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
        try:
            _linear(pattern)
        except re2.error:
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


def _check_meta(schema: Any, what: str) -> None:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        _invalid(f"{what} is not a valid json schema: {exc.message}")
    except RecursionError:  # the size check keeps this out of reach; belt and braces
        _invalid(f"{what} nests too deeply")


def _crawled(schema: Any) -> Registry[Any]:
    """A registry of the schema's own resources (its ``$id`` values and anchors), crawled once.

    Uncrawled, every lookup of an ``$id`` other than the root's crawls the whole
    document again: 2,000 such references took 7 s to validate 200 items.
    """
    root = DRAFT202012.create_resource(schema)
    crawled: Registry[Any] = _REGISTRY.with_resource(root.id() or "", root).crawl()
    return crawled


def _check_references(
    schema: Any, what: str, limits: SchemaLimits, registry: Registry[Any]
) -> None:
    """Resolve every reference inside the document; refuse cycles that consume nothing.

    Walks the schema the way the validator will (subschemas, then reference
    targets), with the same resolver, so whatever resolves here resolves the same
    way later, from the document, with nothing retrieved.
    """
    if not isinstance(schema, dict):
        return
    checked: set[int] = set()  # subschemas the meta-schema check has seen
    for node in _subschemas(schema):
        checked.add(id(node))
    seen: dict[int, dict[str, Any]] = {}
    in_place: dict[int, list[int]] = {}
    root_uri = DRAFT202012.create_resource(schema).id() or ""
    work: list[tuple[Any, Any, bool]] = [(schema, registry.resolver(root_uri), True)]
    while work:
        contents, resolver, is_root = work.pop()
        if not isinstance(contents, dict) or id(contents) in seen:
            continue
        if id(contents) not in checked:
            # A reference target in a place the meta-schema check did not visit.
            _check_meta(contents, what)
            checked.update(id(node) for node in _subschemas(contents))
        if not is_root and "$schema" in contents:
            _invalid(f"{what}: $schema is allowed only at the root")
        seen[id(contents)] = contents
        edges = in_place.setdefault(id(contents), [])
        for keyword in _REFERENCES:
            ref = contents.get(keyword)
            if not isinstance(ref, str):
                continue
            try:
                resolved = resolver.lookup(ref)
            except Exception:
                _invalid(
                    f"{what}: {keyword} {ref[:100]!r} does not resolve inside the schema"
                    " (only references to the schema itself are allowed)"
                )
            target = resolved.contents
            if not isinstance(target, dict | bool):
                _invalid(f"{what}: {keyword} {ref[:100]!r} does not point at a schema")
            if isinstance(target, dict):
                edges.append(id(target))
                work.append((target, resolved.resolver, False))
        for keyword in _IN_PLACE_ONE:
            child = contents.get(keyword)
            if isinstance(child, dict):
                edges.append(id(child))
        for keyword in _IN_PLACE_MANY:
            edges.extend(id(c) for c in contents.get(keyword, ()) if isinstance(c, dict))
        dependent = contents.get("dependentSchemas")
        if isinstance(dependent, dict):
            edges.extend(id(c) for c in dependent.values() if isinstance(c, dict))
        for child in DRAFT202012.subresources_of(contents):
            if isinstance(child, dict):
                sub = resolver.in_subresource(DRAFT202012.create_resource(child))
                work.append((child, sub, False))
    if _has_cycle(in_place):
        _invalid(f"{what} refers to itself without consuming any of the value ($ref cycle)")
    if _most_paths(in_place, limits.in_place) > limits.in_place:
        _invalid(
            f"{what} applies more than {limits.in_place} subschemas at one place of the value"
            " (in-place references multiply)"
        )


def _subschemas(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``schema`` and every subschema in a schema position (not through references)."""
    work: list[Any] = [schema]
    while work:
        node = work.pop()
        if isinstance(node, dict):
            yield node
            work.extend(DRAFT202012.subresources_of(node))


def _most_paths(edges: dict[int, list[int]], cap: int) -> int:
    """The most subschemas reached in place from any one node (a DAG; capped at ``cap + 1``)."""
    paths: dict[int, int] = {}
    for start in edges:
        work = [start]
        while work:
            node = work[-1]
            if node in paths:
                work.pop()
                continue
            pending = [c for c in edges.get(node, ()) if c not in paths]
            if pending:
                work.extend(pending)
                continue
            work.pop()
            paths[node] = min(cap + 1, 1 + sum(paths[c] for c in edges.get(node, ())))
    return max(paths.values(), default=0)


def _has_cycle(edges: dict[int, list[int]]) -> bool:
    """Whether the in-place graph has a cycle (iterative depth-first search)."""
    state: dict[int, int] = {}  # 1: on the current path, 2: finished
    for start in edges:
        if start in state:
            continue
        path: list[tuple[int, Iterator[int]]] = [(start, iter(edges.get(start, ())))]
        state[start] = 1
        while path:
            node, children = path[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                path.pop()
            elif state.get(child) == 1:
                return True
            elif child not in state:
                state[child] = 1
                path.append((child, iter(edges.get(child, ()))))
    return False
