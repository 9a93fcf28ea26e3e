"""Reading a worker subprocess's JSON log lines."""

from __future__ import annotations

import json
from typing import Any

from tests.processes import WorkerProcess, eventually


def json_lines(worker: WorkerProcess) -> list[dict[str, Any]]:
    """Every JSON line the worker wrote so far (the banner and prints are not JSON)."""
    out = []
    for line in list(worker.lines):
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


async def line_where(worker: WorkerProcess, **fields: Any) -> dict[str, Any]:
    """The first JSON line with all of ``fields``, waited for."""
    found: list[dict[str, Any]] = []

    def seen() -> bool:
        found[:] = [r for r in json_lines(worker) if all(r.get(k) == v for k, v in fields.items())]
        return bool(found)

    await eventually(seen, timeout=10)
    return found[0]
