"""In-memory session store: the embedded default for a single worker."""

from __future__ import annotations

from collections import OrderedDict

from wsserver.store.base import ResponseUsage, SessionRecord

_KEEP_ENDED = 10_000


class MemorySessionStore:
    """Session records in a dict; ended sessions' usage kept for a while."""

    def __init__(self) -> None:
        self._records: dict[str, SessionRecord] = {}
        self._ended: OrderedDict[str, SessionRecord] = OrderedDict()

    async def create(self, record: SessionRecord) -> None:
        self._records[record.session_id] = record

    async def get(self, session_id: str) -> SessionRecord | None:
        return self._records.get(session_id)

    async def remove(self, session_id: str) -> None:
        record = self._records.pop(session_id, None)
        if record is not None:
            # Usage outlives the session: billing reads it after the fact.
            self._ended[session_id] = record
            while len(self._ended) > _KEEP_ENDED:
                self._ended.popitem(last=False)

    async def record_usage(self, session_id: str, entry: ResponseUsage) -> None:
        record = self._records.get(session_id) or self._ended.get(session_id)
        if record is not None:
            record.responses.append(entry)

    async def usage_record(self, session_id: str) -> SessionRecord | None:
        """A session's record, live or ended (for usage reports)."""
        return self._records.get(session_id) or self._ended.get(session_id)

    async def ready(self) -> bool:
        return True

    async def close(self) -> None:
        self._records.clear()
