"""Watch for network and file access through Python's audit hooks (no sockets needed).

``io_imports()`` lists the imports of I/O and clock modules in a package's source.
``watch_io()`` records, while it is active, every audit event that reaches the
network (``socket.*``, ``urllib.Request``) or opens a file outside the
interpreter's own installation (imports open modules; they do not count).
A hook cannot be removed once added, so one is installed per process and
switched on and off.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import pkgutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_recording: list[list[str]] = []
_installed = False
_OWN = tuple({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _recording:
        return
    if event.startswith("socket.") or event == "urllib.Request":
        _recording[-1].append(f"{event} {args[:2]!r}")
    elif event == "open" and args and isinstance(args[0], str | bytes):
        path = os.path.realpath(os.fsdecode(args[0]))
        if not path.startswith(_OWN):
            _recording[-1].append(f"open {path}")


@contextmanager
def watch_io() -> Iterator[list[str]]:
    """The I/O events seen while the block runs."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
    seen: list[str] = []
    _recording.append(seen)
    try:
        yield seen
    finally:
        _recording.remove(seen)


_IO_MODULES = frozenset(
    {"asyncio", "websockets", "redis", "socket", "time", "datetime", "threading"}
)
"""What sans-I/O code must not import: event loops, sockets, stores, the clock."""


def io_imports(package: str) -> list[str]:
    """Every import of an I/O or clock module in ``package``'s source (``module: name``)."""
    root = importlib.import_module(package)
    found: list[str] = []
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        spec = importlib.util.find_spec(info.name)
        assert spec is not None and spec.origin is not None
        tree = ast.parse(Path(spec.origin).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            else:
                continue
            found += [f"{info.name}: {n}" for n in names if n.split(".")[0] in _IO_MODULES]
    return found
