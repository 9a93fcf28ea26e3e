"""In-memory session store: the embedded default for a single worker.

It keeps the same contract as the Redis store (epochs, leases, a capped replay
log with a resume window, a usage ledger, a tool-call ledger), with expiry
checked on access. Each method runs without awaiting, so it is atomic.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from wsserver.store.base import (
    AppendBatch,
    AppendResult,
    LogSlice,
    ResponseUsage,
    SessionRecord,
    StoreLimits,
    ToolCallRecord,
    ToolCallStatus,
    ToolResultOutcome,
    check_close_status,
)


@dataclass(slots=True)
class _Entry:
    record: SessionRecord
    touched: float
    lease_until: float
    log: deque[tuple[int, bytes]] = field(default_factory=deque)
    log_bytes: int = 0
    tool_calls: dict[str, ToolCallRecord] = field(default_factory=dict)
    """The tool-call ledger, by call id in the order added; it dies with the entry."""


class MemorySessionStore:
    """Session records, logs and ledgers in dicts."""

    shared = False

    def __init__(
        self, limits: StoreLimits | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits = limits or StoreLimits()
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._ledgers: dict[str, list[ResponseUsage]] = {}
        self._token_uses: dict[str, tuple[int, float]] = {}
        """Client token id → (sessions opened, expiry on the store's clock)."""
        self._ended: dict[str, tuple[int, float]] = {}
        """Removed session id → (its last epoch, until when it is kept), as Redis keeps it."""

    def _live(self, session_id: str) -> _Entry | None:
        entry = self._entries.get(session_id)
        if entry is None:
            return None
        now = self._clock()
        if now - entry.touched > self.limits.session_ttl:
            del self._entries[session_id]
            return None
        if now - entry.touched > self.limits.resume_window:
            # The replay log has a shorter life than the record and its snapshot.
            entry.log.clear()
            entry.log_bytes = 0
            entry.record.partial_text = ""
        return entry

    def _touch(self, entry: _Entry, owner: str | None) -> None:
        now = self._clock()
        entry.touched = now
        if owner is not None:
            entry.record.owner = owner
            entry.lease_until = now + self.limits.lease_ttl

    async def create(self, record: SessionRecord) -> None:
        now = self._clock()
        self._entries[record.session_id] = _Entry(replace(record), now, now + self.limits.lease_ttl)

    async def get(self, session_id: str) -> SessionRecord | None:
        entry = self._live(session_id)
        if entry is None:
            return None
        record = replace(entry.record)
        record.owner_live = entry.lease_until > self._clock()
        return record

    async def claim(self, session_id: str, owner: str) -> SessionRecord | None:
        entry = self._live(session_id)
        if entry is None:
            return None
        before = replace(entry.record)
        before.owner_live = entry.lease_until > self._clock()
        entry.record.epoch += 1
        before.epoch = entry.record.epoch
        self._touch(entry, owner)
        return before

    async def append(self, batches: Sequence[AppendBatch]) -> AppendResult:
        result = AppendResult()
        for batch in batches:
            entry = self._live(batch.session_id)
            fenced = entry is None and self._fenced(batch.session_id, batch.epoch)
            if not fenced and (entry is None or entry.record.epoch == batch.epoch):
                for usage in batch.usage:
                    await self.record_usage(batch.session_id, usage)
            else:
                self._record_unknown_usage(batch, entry)
            if entry is None:
                (result.stale if fenced else result.gone).add(batch.session_id)
                continue
            if entry.record.epoch != batch.epoch:
                result.stale.add(batch.session_id)
                continue
            last = entry.log[-1][0] if entry.log else 0
            for seq, payload in batch.events:
                if seq > last:
                    entry.log.append((seq, payload))
                    entry.log_bytes += len(payload)
                    last = seq
            self._trim(entry, batch.acked_seq)
            record = entry.record
            record.stream = batch.stream
            if batch.conversation is not None:
                record.conversation = batch.conversation
            if batch.partial_reset:
                record.partial_text = ""
            record.partial_text = _placed(record.partial_text, batch)
            # Like the Redis store: a write refreshes the TTLs; the lease is renew()'s job.
            entry.touched = self._clock()
            record.owner = batch.owner
            if batch.remove:
                del self._entries[batch.session_id]
        return result

    def _trim(self, entry: _Entry, acked_seq: int) -> None:
        limits = self.limits
        while entry.log and entry.log[0][0] <= acked_seq:
            entry.log_bytes -= len(entry.log.popleft()[1])
        while entry.log and (
            len(entry.log) > limits.log_max_events or entry.log_bytes > limits.log_max_bytes
        ):
            entry.log_bytes -= len(entry.log.popleft()[1])

    async def read_log(self, session_id: str, after_seq: int) -> LogSlice:
        entry = self._live(session_id)
        if entry is None:
            return LogSlice(after_seq + 1, [])
        last_seq = int(entry.record.stream.get("last_seq", 0))
        first = entry.log[0][0] if entry.log else last_seq + 1
        return LogSlice(first, [(s, p) for s, p in entry.log if s > after_seq])

    async def renew(self, leases: Sequence[tuple[str, int, str]]) -> AppendResult:
        result = AppendResult()
        for session_id, epoch, owner in leases:
            entry = self._live(session_id)
            if entry is None:
                (result.stale if self._fenced(session_id, epoch) else result.gone).add(session_id)
            elif entry.record.epoch != epoch:
                result.stale.add(session_id)
            else:
                self._touch(entry, owner)
        return result

    async def remove(self, session_id: str, epoch: int) -> None:
        entry = self._entries.get(session_id)
        if entry is not None and entry.record.epoch == epoch:
            del self._entries[session_id]
            now = self._clock()
            # Kept for the same time each, so in expiry order: the oldest go first.
            while self._ended:
                oldest = next(iter(self._ended))
                if self._ended[oldest][1] > now:
                    break
                del self._ended[oldest]
            keep = self.limits.resume_window + self.limits.lease_ttl
            self._ended.pop(session_id, None)
            self._ended[session_id] = (epoch, now + keep)

    def _record_unknown_usage(self, batch: AppendBatch, entry: _Entry | None) -> None:
        """A fenced-off owner's usage, as the Redis store keeps it: only for responses
        its successor knows nothing of (neither running in the stream snapshot it
        claimed, which it ends and records, nor in the ledger already)."""
        if not batch.usage:
            return
        ledger = self._ledgers.setdefault(batch.session_id, [])
        counted = {usage.response_id for usage in ledger}
        active = entry.record.stream.get("active") if entry is not None else None
        running = active.get("response_id") if isinstance(active, dict) else None
        ledger.extend(
            usage
            for usage in batch.usage
            if usage.response_id not in counted and usage.response_id != running
        )

    def _fenced(self, session_id: str, epoch: int) -> bool:
        """Whether a later owner removed the session: ``epoch``'s owner was fenced off."""
        ended = self._ended.get(session_id)
        return ended is not None and ended[1] > self._clock() and ended[0] != epoch

    async def record_usage(self, session_id: str, entry: ResponseUsage) -> None:
        self._ledgers.setdefault(session_id, []).append(entry)

    async def usage(self, session_id: str) -> list[ResponseUsage]:
        return list(self._ledgers.get(session_id, []))

    async def add_tool_calls(self, session_id: str, calls: Sequence[ToolCallRecord]) -> None:
        entry = self._live(session_id)
        if entry is None:
            return
        for call in calls:
            if call.call_id not in entry.tool_calls:
                entry.tool_calls[call.call_id] = replace(
                    call, status=ToolCallStatus.PENDING, output=None, error=None
                )

    async def apply_tool_result(
        self, session_id: str, call_id: str, output: str | None, error: str | None
    ) -> tuple[ToolResultOutcome, ToolCallRecord | None]:
        entry = self._live(session_id)
        call = entry.tool_calls.get(call_id) if entry is not None else None
        if entry is None or call is None:
            return ToolResultOutcome.UNKNOWN, None
        if call.status is ToolCallStatus.COMPLETED:
            return ToolResultOutcome.DUPLICATE, call
        if call.status is not ToolCallStatus.PENDING:
            return ToolResultOutcome.CLOSED, call
        call = replace(call, status=ToolCallStatus.COMPLETED, output=output, error=error)
        entry.tool_calls[call_id] = call
        return ToolResultOutcome.APPLIED, call

    async def close_tool_call(self, session_id: str, call_id: str, status: ToolCallStatus) -> bool:
        check_close_status(status)
        entry = self._live(session_id)
        call = entry.tool_calls.get(call_id) if entry is not None else None
        if entry is None or call is None or call.status is not ToolCallStatus.PENDING:
            return False
        entry.tool_calls[call_id] = replace(call, status=status)
        return True

    async def tool_calls(self, session_id: str) -> list[ToolCallRecord]:
        entry = self._live(session_id)
        return list(entry.tool_calls.values()) if entry is not None else []

    async def use_client_token(self, token_id: str, limit: int, ttl: float) -> bool:
        now = self._clock()
        if len(self._token_uses) > 10_000:
            # Expired counts go lazily; only a flood of tokens makes this worth a pass.
            self._token_uses = {k: v for k, v in self._token_uses.items() if v[1] > now}
        used, until = self._token_uses.get(token_id, (0, now + ttl))
        if until <= now:
            used, until = 0, now + ttl
        if used >= limit:
            return False
        self._token_uses[token_id] = (used + 1, until)
        return True

    async def ready(self) -> bool:
        return True

    async def close(self) -> None:
        self._entries.clear()


def _placed(partial: str, batch: AppendBatch) -> str:
    """The partial text with the batch's text at its offset, as the Redis store places it."""
    if batch.partial_offset is None:
        return partial + batch.partial_append
    stored, text = partial.encode(), batch.partial_append.encode()
    if len(stored) < batch.partial_offset:
        return partial
    offset = batch.partial_offset
    return (stored[:offset] + text + stored[offset + len(text) :]).decode(errors="replace")
