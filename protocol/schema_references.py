"""The references of a client schema: all inside it, none that loops without progress.

:func:`reference_problem` walks a schema the way the validator will (subschemas,
then reference targets), with the same resolver, so whatever resolves here
resolves the same way later, from the document, with nothing retrieved. It also
builds the graph of in-place applications (keywords that apply a subschema to the
same place of the value) to refuse cycles, which could never finish, and sharing
that multiplies without bound.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from referencing import Registry
from referencing.jsonschema import DRAFT202012

from protocol.schema_validator import meta_problem

__all__ = ["reference_problem"]

# Keywords that apply a subschema to the same place of the value: a cycle through
# these alone never reaches a leaf of the value.
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MANY = ("allOf", "anyOf", "oneOf")
_REFERENCES = ("$ref", "$dynamicRef")


NESTED_DIALECT = "has $schema below its root ($schema is allowed only at the root)"


def reference_problem(schema: Any, registry: Registry[Any], in_place_limit: int) -> str | None:
    """What is wrong with the references of ``schema`` (a sentence after its name), or ``None``.

    ``schema`` has passed its size and meta-schema checks; ``registry`` is its own.
    """
    if not isinstance(schema, dict):
        return None
    checked = {id(node) for node in _subschemas(schema)}  # seen by the meta-schema check
    seen: set[int] = set()
    in_place: dict[int, list[int]] = {}
    root_uri = DRAFT202012.create_resource(schema).id() or ""
    work: list[tuple[Any, Any, bool]] = [(schema, registry.resolver(root_uri), True)]
    while work:
        contents, resolver, is_root = work.pop()
        if not isinstance(contents, dict) or id(contents) in seen:
            continue
        if id(contents) not in checked:
            # A reference target in a place the meta-schema check did not visit.
            problem = meta_problem(contents)
            if problem is not None:
                return problem
            checked.update(id(node) for node in _subschemas(contents))
        if not is_root and "$schema" in contents:
            return NESTED_DIALECT
        seen.add(id(contents))
        edges = in_place.setdefault(id(contents), [])
        for keyword in _REFERENCES:
            ref = contents.get(keyword)
            if not isinstance(ref, str):
                continue
            try:
                resolved = resolver.lookup(ref)
            except Exception:
                return (
                    f"has a {keyword} {ref[:100]!r} that does not resolve inside the schema"
                    " (only references to the schema itself are allowed)"
                )
            target = resolved.contents
            if not isinstance(target, dict | bool):
                return f"has a {keyword} {ref[:100]!r} that does not point at a schema"
            if isinstance(target, dict):
                edges.append(id(target))
                work.append((target, resolved.resolver, False))
        edges.extend(id(child) for child in _in_place_children(contents))
        for child in DRAFT202012.subresources_of(contents):
            if isinstance(child, dict):
                sub = resolver.in_subresource(DRAFT202012.create_resource(child))
                work.append((child, sub, False))
    if _has_cycle(in_place):
        return "refers to itself without consuming any of the value ($ref cycle)"
    if _most_paths(in_place, in_place_limit) > in_place_limit:
        return (
            f"applies more than {in_place_limit} subschemas at one place of the value"
            " (in-place references multiply)"
        )
    return None


def _in_place_children(contents: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for keyword in _IN_PLACE_ONE:
        child = contents.get(keyword)
        if isinstance(child, dict):
            yield child
    for keyword in _IN_PLACE_MANY:
        yield from (c for c in contents.get(keyword, ()) if isinstance(c, dict))
    dependent = contents.get("dependentSchemas")
    if isinstance(dependent, dict):
        yield from (c for c in dependent.values() if isinstance(c, dict))


def nested_dialect(schema: Any) -> bool:
    """Whether a subschema below the root names a ``$schema``.

    Checked before the schema's resources are crawled: a subschema that names
    another dialect (draft-04, say) is read by that dialect's rules while
    crawling, and those break on a boolean subschema inside it.
    """
    if not isinstance(schema, dict):
        return False
    return any("$schema" in node for node in _subschemas(schema) if node is not schema)


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
