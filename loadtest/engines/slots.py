"""How long llama.cpp's server keeps decoding after a request is given up: its ``/slots``."""

from __future__ import annotations

import asyncio
import time

import httpx

from wsserver.engine.http_auth import bearer_header

POLL_S = 0.01
"""Between two looks at ``/slots`` (each is one loopback request the server answers)."""


async def busy_slots(client: httpx.AsyncClient, address: str, key: str) -> int:
    """Slots decoding now (the embedded server wants its API key)."""
    answer = await client.get(address + "/slots", headers=bearer_header(key), timeout=10)
    answer.raise_for_status()
    return sum(1 for slot in answer.json() if slot.get("is_processing"))


async def seconds_until_idle(
    client: httpx.AsyncClient, address: str, key: str, since: float, timeout: float = 30.0
) -> float | None:
    """Seconds from ``since`` (a ``perf_counter``) until no slot decodes; ``None`` past
    ``timeout`` (the upstream never freed the request)."""
    while await busy_slots(client, address, key):
        if time.perf_counter() - since > timeout:
            return None
        await asyncio.sleep(POLL_S)
    return time.perf_counter() - since
