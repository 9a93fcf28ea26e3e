"""Reading what a worker wrote to a real session store, for tests that wait for it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from protocol.snapshot import ConversationSnapshot
from wsserver.store.base import StoreLimits
from wsserver.store.selector import open_store


async def stored_snapshot_when(
    store_url: str,
    session_id: str,
    condition: Callable[[ConversationSnapshot], bool],
    timeout: float = 15.0,
) -> ConversationSnapshot:
    """The stored conversation snapshot once ``condition(snapshot)`` holds (bounded wait:
    a worker writes in batches)."""
    deadline = asyncio.get_running_loop().time() + timeout
    store = open_store(store_url, StoreLimits())
    try:
        while True:
            record = await store.get(session_id)
            if record is not None:
                snapshot = ConversationSnapshot.from_dict(record.conversation)
                if condition(snapshot):
                    return snapshot
            assert asyncio.get_running_loop().time() < deadline, "the store never got it"
            await asyncio.sleep(0.02)
    finally:
        await store.close()
