"""In-process worker registry: for a single process, and for tests.

It keeps the Redis registry's contract (entries that lapse ``ttl`` seconds after
their last publication, withdrawal at once, live workers sorted by id) in a dict,
with expiry checked on access. A session's owner is read from the session store
the registry was given (its owner lease), as the Redis registry reads the store's
lease key.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from wsserver.registry.base import RegistryUnavailable, WorkerInfo
from wsserver.store.base import SessionStore, SessionStoreError


class MemoryWorkerRegistry:
    """Worker entries in a dict; owners from an in-process session store."""

    def __init__(
        self,
        *,
        ttl: float = 6.0,
        sessions: SessionStore | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self._sessions = sessions
        self._clock = clock
        self._entries: dict[str, tuple[WorkerInfo, float]] = {}
        """Worker id → (its latest entry, when it lapses on the registry's clock)."""

    async def publish(self, info: WorkerInfo) -> None:
        self._entries[info.worker_id] = (info, self._clock() + self.ttl)

    async def withdraw(self, worker_id: str) -> None:
        self._entries.pop(worker_id, None)

    async def live(self) -> list[WorkerInfo]:
        now = self._clock()
        for worker_id in [w for w, (_, lapses) in self._entries.items() if lapses <= now]:
            del self._entries[worker_id]
        return [info for _, (info, _) in sorted(self._entries.items())]

    async def owner_of(self, session_id: str) -> str | None:
        if self._sessions is None:
            return None  # no store, no sessions: nobody owns anything
        try:
            record = await self._sessions.get(session_id)
        except SessionStoreError as exc:
            raise RegistryUnavailable(f"session store: {exc}") from exc
        if record is None or not record.owner_live:
            return None
        return record.owner

    async def close(self) -> None:
        self._entries.clear()
