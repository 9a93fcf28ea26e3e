"""What a client may send as a value: JSON data, nested and sized within fixed bounds.

Both encodings decode into the same Python values, and every value a client sends
must be one that re-encodes under both of them, goes into the session store, and
reaches the engine unchanged. That is *JSON data* in the sense of I-JSON (RFC 7493):

* objects with string keys, arrays, strings, integers, finite floats, booleans, null;
* strings are valid Unicode (no lone surrogate, which UTF-8 cannot carry);
* integers fit msgpack's 64 bits (``-2**63`` to ``2**64 - 1``);
* a message nests at most :data:`MAX_DEPTH` levels (the message object is level 1)
  and holds at most :data:`MAX_VALUES` values in all.

msgpack bin and ext values (bytes, timestamps), non-string keys, NaN and infinities
are not JSON data. Every check here is a short walk over values already decoded: a
client message is small, and audio travels in its own binary frames.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

MAX_DEPTH = 64
"""Deepest nesting of objects and arrays in one message, the message object included.

A tool schema with objects nested ten deep sits at about level 25; this leaves room
for real schemas and tool outputs while keeping every recursive walk (validation,
schema compilation, encoding) far from the interpreter's recursion limit."""

MAX_VALUES = 100_000
"""Most values (containers and scalars) in one message; far above any real tool output."""

INT_MIN = -(2**63)
INT_MAX = 2**64 - 1

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""Lone surrogates: valid in a Python str, not in UTF-8 (JSON text) nor msgpack."""
_SURROGATE = LONE_SURROGATE


class NotJsonData(ValueError):
    """A value that is not JSON data; ``path`` locates it from the message's top."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str | int] = []
        """Keys and indexes from the top, filled in while the walk unwinds."""

    @property
    def where(self) -> str:
        """The path as ``tools.0.parameters``; ``message`` for the top itself."""
        return ".".join(safe_text(str(part), 40) for part in reversed(self.path)) or "message"


def check_json_data(value: Any) -> None:
    """Raise :class:`NotJsonData` unless ``value`` is JSON data within the bounds above."""
    _check(value, 1)


def exceeds_depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` levels (itself level 1).

    Walks level by level without recursion, and stops once past the limit.
    """
    if type(value) is not dict and type(value) is not list:
        return False
    level: list[Any] = [value]
    depth = 1  # of the containers in ``level``
    while level:
        below: list[Any] = []
        for node in level:
            for item in node.values() if type(node) is dict else node:
                if type(item) is dict or type(item) is list:
                    if depth == limit:
                        return True
                    if item:  # an empty one has nothing further down
                        below.append(item)
        depth += 1
        level = below
    return False


def has_invalid_text(value: Any) -> bool:
    """Whether a string (or an object key) in ``value`` holds a lone surrogate.

    ``value`` must already be within :data:`MAX_DEPTH`.
    """
    if type(value) is str:
        return _SURROGATE.search(value) is not None
    if type(value) is dict:
        return any(has_invalid_text(k) or has_invalid_text(v) for k, v in value.items())
    if type(value) is list:
        return any(has_invalid_text(item) for item in value)
    return False


def is_valid_text(text: str) -> bool:
    """Whether ``text`` is valid Unicode: it holds no lone surrogate."""
    return text.isascii() or _SURROGATE.search(text) is None


def safe_text(text: str, limit: int = 64) -> str:
    """``text`` fit to echo back in an error: at most ``limit`` characters, valid Unicode.

    Lone surrogates become ``\\udXXX`` escapes; anything cut is marked with ``…``.
    """
    # Cut first (the input may be long), then escape, then cut what escaping added.
    cut = len(text) > limit
    if cut:
        text = text[:limit]
    if not text.isascii() and _SURROGATE.search(text) is not None:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if cut or len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _check(value: Any, depth: int) -> int:
    """Check one value; the number of values it holds (itself included)."""
    kind = type(value)
    if kind is dict:
        return _check_object(value, depth)
    if kind is list:
        return _check_array(value, depth)
    if _plain_scalar(value):
        return 1
    raise _scalar_problem(value)


def _plain_scalar(value: Any) -> bool:
    kind = type(value)
    if kind is str:
        return is_valid_text(value)
    if kind is int:
        return bool(INT_MIN <= value <= INT_MAX)
    if kind is float:
        return math.isfinite(value)
    return kind is bool or value is None


def _check_object(value: dict[Any, Any], depth: int) -> int:
    if depth > MAX_DEPTH:
        raise NotJsonData(f"nested deeper than {MAX_DEPTH} levels")
    for key in value:
        if type(key) is not str:
            raise NotJsonData(f"object key is {_describe(key)}, not a string")
        if not key.isascii() and _SURROGATE.search(key) is not None:
            raise NotJsonData("object key holds a lone surrogate")
    return _check_members(value.items(), depth)


def _check_array(value: list[Any], depth: int) -> int:
    return _check_members(enumerate(value), depth)


def _check_members(members: Iterable[tuple[str | int, Any]], depth: int) -> int:
    """The members of a container (key or index, value); the values they hold, plus one."""
    if depth > MAX_DEPTH:
        raise NotJsonData(f"nested deeper than {MAX_DEPTH} levels")
    count = 1
    for where, item in members:
        # Scalars are checked inline: a call per value would dominate the walk.
        kind = type(item)
        if kind is str and (item.isascii() or _SURROGATE.search(item) is None):
            count += 1
            continue
        if (
            (kind is int and INT_MIN <= item <= INT_MAX)
            or (kind is float and math.isfinite(item))
            or kind is bool
            or item is None
        ):
            count += 1
            continue
        try:
            count += _check(item, depth + 1)
        except NotJsonData as exc:
            exc.path.append(where)
            raise
        if count > MAX_VALUES:
            raise NotJsonData(f"more than {MAX_VALUES} values")
    if count > MAX_VALUES:
        raise NotJsonData(f"more than {MAX_VALUES} values")
    return count


def _scalar_problem(value: Any) -> NotJsonData:
    kind = type(value)
    if kind is str:
        return NotJsonData("string holds a lone surrogate")
    if kind is int:
        return NotJsonData("integer outside the 64-bit range")
    if kind is float:
        return NotJsonData("number is not finite")
    return NotJsonData(f"{_describe(value)} is not json data")


def _describe(value: Any) -> str:
    """A short name for a value's kind; never the value itself."""
    if isinstance(value, bytes | bytearray | memoryview):
        return "bytes"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if value is None:
        return "null"
    if isinstance(value, tuple):
        # msgpack's ExtType and Timestamp-like values arrive as tuples or objects.
        return "an ext value" if type(value).__name__ == "ExtType" else "a tuple"
    return f"a {type(value).__name__.lower()} value"
