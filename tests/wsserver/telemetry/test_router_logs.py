"""The router writes the chosen format too: JSON lines, or one readable line each."""

from __future__ import annotations

import json

from tests.processes import eventually
from tests.wsserver.router.test_router import RouterProcess

# Nothing listens there: the router's first registry read fails and says so.
NO_STORE = "redis://127.0.0.1:1/0"


def unavailable(router: RouterProcess) -> list[str]:
    return [x for x in router.lines if "registry unavailable" in x]


async def test_router_json_and_human_lines() -> None:
    routers = {
        log_format: RouterProcess(NO_STORE, "--log-format", log_format, "--store-timeout", "0.2")
        for log_format in ("json", "human")
    }
    try:
        await eventually(lambda: all(unavailable(r) for r in routers.values()))
    finally:
        for router in routers.values():
            router.stop()
    record = json.loads(unavailable(routers["json"])[0])
    assert record["level"] == "WARNING" and record["logger"] == "wsserver.router.server"
    assert record["message"].startswith("registry unavailable, keeping 0 workers")
    human = unavailable(routers["human"])[0]
    assert " WARNING wsserver.router.server: registry unavailable" in human
    assert not human.startswith("{")
