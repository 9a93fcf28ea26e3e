"""The router writes the chosen format too: JSON lines, or one readable line each."""

from __future__ import annotations

import json

from tests.processes import eventually
from tests.wsserver.router.test_router import RouterProcess

# Nothing listens there: the router's first registry read fails and says so.
NO_STORE = "redis://127.0.0.1:1/0"


async def test_router_json_and_human_lines() -> None:
    lines: dict[str, list[str]] = {}
    for log_format in ("json", "human"):
        router = RouterProcess(NO_STORE, "--log-format", log_format, "--store-timeout", "0.2")
        try:
            await eventually(lambda r=router: any("registry unavailable" in x for x in r.lines))
        finally:
            router.stop()
        lines[log_format] = [x for x in router.lines if "registry unavailable" in x]
    record = json.loads(lines["json"][0])
    assert record["level"] == "WARNING" and record["logger"] == "wsserver.router.server"
    assert record["message"].startswith("registry unavailable, keeping 0 workers")
    assert " WARNING wsserver.router.server: registry unavailable" in lines["human"][0]
    assert not lines["human"][0].startswith("{")
