"""The provisional value of a partial JSON document: a copy of the parser's containers."""

from __future__ import annotations

from typing import Any

from protocol.partial_json_grammar import MISSING


def snapshot(root: Any, tip: object, key: str, leaf: Any) -> Any:
    """Deep-copy the containers of ``root``, adding ``leaf`` to the copy of ``tip``.

    A copy so that callers may change what they get without corrupting the parser;
    iterative so that deep nesting cannot exhaust the interpreter's stack.
    """
    if not isinstance(root, dict | list):
        return root
    out = _empty_like(root)
    work: list[tuple[Any, Any]] = [(root, out)]
    while work:
        src, dst = work.pop()
        if isinstance(src, list):
            dst.extend(_copy_child(item, work) for item in src)
        else:
            dst.update((name, _copy_child(item, work)) for name, item in src.items())
        if src is tip and leaf is not MISSING:
            if isinstance(dst, list):
                dst.append(leaf)
            else:
                dst[key] = leaf
    return out


def _empty_like(container: dict[str, Any] | list[Any]) -> dict[str, Any] | list[Any]:
    return {} if isinstance(container, dict) else []


def _copy_child(item: Any, work: list[tuple[Any, Any]]) -> Any:
    """An empty stand-in for a container ``item`` (queued to be filled), else ``item``."""
    if not isinstance(item, dict | list):
        return item
    copy = _empty_like(item)
    work.append((item, copy))
    return copy
