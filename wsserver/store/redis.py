"""Redis session store: any worker can resume any session.

Where each part of a session lives is in :mod:`wsserver.store.redis_layout`; the
scripts that change several keys at once, with the fencing epoch checked inside,
are in :mod:`wsserver.store.redis_scripts`. Every call has a bounded timeout and
no retries (:mod:`wsserver.store.redis_client`): when Redis is down the worker
learns it at once and decides (keep streaming from memory, refuse new sessions)
instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from redis.exceptions import ResponseError

from wsserver.store import redis_scripts
from wsserver.store.base import (
    AppendBatch,
    AppendResult,
    LogSlice,
    ResponseUsage,
    SessionRecord,
    SessionStoreUnavailable,
    StoredDataUnreadable,
    StoreLimits,
    ToolCallRecord,
    ToolCallStatus,
    ToolResultOutcome,
    check_close_status,
)
from wsserver.store.redis_client import RedisClient, is_command_error
from wsserver.store.redis_layout import (
    client_token_key,
    compact_json,
    ended_key,
    last_stored_seq,
    milliseconds,
    read_record,
    read_tool_call,
    seq_of,
    session_keys,
    tool_call_order,
    usage_key,
)

log = logging.getLogger(__name__)

T = TypeVar("T")


class RedisSessionStore:
    """The shared store."""

    shared = True

    def __init__(
        self,
        url: str,
        limits: StoreLimits | None = None,
        *,
        timeout: float = 0.5,
        max_connections: int | None = None,
    ) -> None:
        self.url = url
        self.limits = limits or StoreLimits()
        self.client = RedisClient(
            url,
            timeout=timeout,
            unavailable=SessionStoreUnavailable,
            max_connections=max_connections,
        )
        self.redis = self.client.redis
        script = self.client.script
        self._append = script(redis_scripts.APPEND)
        self._claim = script(redis_scripts.CLAIM)
        self._renew = script(redis_scripts.RENEW)
        self._remove = script(redis_scripts.REMOVE)
        self._add_tool_calls = script(redis_scripts.ADD_TOOL_CALLS)
        self._settle_tool_call = script(redis_scripts.SETTLE_TOOL_CALL)
        self._use_client_token = script(redis_scripts.USE_CLIENT_TOKEN)
        self._refreshed_at = -math.inf
        """When renew last refreshed the TTLs of the sessions' other keys (monotonic)."""
        self._refresh_every = min(self.limits.resume_window, self.limits.session_ttl) / 4
        # Every write and every refresh sets a key's TTL to its window plus the time
        # to the next refresh: the log then outlives a crashed owner by the whole
        # resume window after its last renewal, the record by the session TTL.
        self._meta_ttl_ms = milliseconds(self.limits.session_ttl + self._refresh_every)
        self._log_ttl_ms = milliseconds(self.limits.resume_window + self._refresh_every)
        # An owner fenced off before a removal hears of it at its next renewal or write,
        # at the latest when its copy's resume window ends.
        self._ended_ttl_ms = self._log_ttl_ms + milliseconds(self.limits.lease_ttl)
        self._ready: asyncio.Task[bool] | None = None

    @property
    def round_trips(self) -> int:
        """Calls that went to Redis (a pipeline counts once)."""
        return self.client.round_trips

    async def create(self, record: SessionRecord) -> None:
        meta, _log, _partial, lease, _tools = session_keys(record.session_id)
        limits = self.limits

        async def run() -> None:
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.hset(
                    meta,
                    mapping={
                        "token_hash": record.token_hash,
                        "created_at": repr(record.created_at),
                        "epoch": record.epoch,
                        "owner": record.owner or "",
                        "conversation": json.dumps(record.conversation),
                        "stream": json.dumps(record.stream),
                        "log_bytes": 0,
                        "principal": record.principal,
                    },
                )
                pipe.pexpire(meta, self._meta_ttl_ms)
                pipe.set(lease, record.owner or "", px=milliseconds(limits.lease_ttl))
                await pipe.execute()

        await self.client.call(run, meta)

    async def get(self, session_id: str) -> SessionRecord | None:
        meta, _log, partial, lease, _tools = session_keys(session_id)

        async def run() -> list[Any]:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.hgetall(meta)
                pipe.get(partial)
                pipe.exists(lease)
                result: list[Any] = await pipe.execute()
                return result

        fields, partial_text, lease_live = await self._read(run, meta, "session record")
        if not fields:
            return None
        return read_record(session_id, fields, partial_text, bool(lease_live))

    async def claim(self, session_id: str, owner: str) -> SessionRecord | None:
        meta, log, partial, lease, tools = session_keys(session_id)
        limits = self.limits

        async def run() -> Any:
            return await self._claim(
                keys=[meta, lease, tools, log, partial],
                args=[
                    owner,
                    milliseconds(limits.lease_ttl),
                    self._meta_ttl_ms,
                    self._log_ttl_ms,
                ],
            )

        claimed = await self._read(run, meta, "claim")
        if claimed is None:
            return None
        epoch, previous, live = claimed
        record = await self.get(session_id)
        if record is None:
            return None
        record.epoch = int(epoch)
        record.owner = previous.decode() if isinstance(previous, bytes) else str(previous)
        record.owner_live = bool(live)
        return record

    async def append(self, batches: Sequence[AppendBatch]) -> AppendResult:
        if not batches:
            return AppendResult()
        limits = self.limits
        meta_ttl, log_ttl, lease_ttl = (
            self._meta_ttl_ms,
            self._log_ttl_ms,
            milliseconds(limits.lease_ttl),
        )
        usage_ttl = milliseconds(limits.usage_ttl)

        async def run(positions: list[int]) -> list[Any]:
            some = [batches[position] for position in positions]
            async with self.redis.pipeline(transaction=False) as pipe:
                for batch in some:
                    args: list[Any] = [
                        batch.epoch,
                        batch.owner,
                        meta_ttl,
                        log_ttl,
                        lease_ttl,
                        limits.log_max_events,
                        limits.log_max_bytes,
                        json.dumps(batch.stream),
                        json.dumps(batch.conversation) if batch.conversation is not None else "",
                        "1" if batch.partial_reset else "0",
                        batch.partial_append,
                        -1 if batch.partial_offset is None else batch.partial_offset,
                        len(batch.events),
                    ]
                    for seq, payload in batch.events:
                        args.append(seq)
                        args.append(payload)
                    args += [usage_ttl, len(batch.usage), *(e.to_json() for e in batch.usage)]
                    args.append(batch.acked_seq)
                    sid = batch.session_id
                    keys = [*session_keys(sid), usage_key(sid), ended_key(sid)]
                    await self.client.queue_script(pipe, self._append, keys, args)
                for batch in some:
                    if batch.remove:
                        # Same slot, same pipeline, after the append: the epoch check holds.
                        sid = batch.session_id
                        await self.client.queue_script(
                            pipe,
                            self._remove,
                            [*session_keys(sid), ended_key(sid)],
                            [batch.epoch, self._ended_ttl_ms],
                        )
                result = _answers(await pipe.execute(raise_on_error=False))
                for answer in result[len(some) :]:
                    if isinstance(answer, ResponseError):
                        log.error("could not remove a session from the store: %s", answer)
                return result[: len(some)]

        ids = [batch.session_id for batch in batches]
        return _outcome(ids, await self.client.by_node(_meta_keys(ids), run))

    async def read_log(self, session_id: str, after_seq: int) -> LogSlice:
        meta, log, _partial, _lease, _tools = session_keys(session_id)

        async def run() -> list[Any]:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.xrange(log, min=f"({after_seq}-0", max="+")
                pipe.xrange(log, min="-", max="+", count=1)
                pipe.hget(meta, "stream")
                result: list[Any] = await pipe.execute()
                return result

        entries, oldest, stream_raw = await self._read(run, meta, "replay log")
        # An entry without its payload (written by hand, or by another version) reads
        # back empty: the takeover takes it for a hole (worker/stored_log.py).
        events = [(seq_of(entry_id), fields.get(b"p", b"")) for entry_id, fields in entries]
        first = seq_of(oldest[0][0]) if oldest else last_stored_seq(stream_raw, after_seq) + 1
        return LogSlice(first, events)

    async def renew(self, leases: Sequence[tuple[str, int, str]]) -> AppendResult:
        if not leases:
            return AppendResult()
        limits = self.limits
        # The lease every time; the other keys' TTLs only every quarter of the shorter of
        # the resume window and the session TTL (their TTLs include that quarter).
        now = time.monotonic()
        refresh = now - self._refreshed_at >= self._refresh_every

        async def run(positions: list[int]) -> list[Any]:
            async with self.redis.pipeline(transaction=False) as pipe:
                for session_id, epoch, owner in (leases[position] for position in positions):
                    await self.client.queue_script(
                        pipe,
                        self._renew,
                        [*session_keys(session_id), ended_key(session_id)],
                        [
                            epoch,
                            owner,
                            self._meta_ttl_ms,
                            self._log_ttl_ms,
                            milliseconds(limits.lease_ttl),
                            "1" if refresh else "0",
                        ],
                    )
                return _answers(await pipe.execute(raise_on_error=False))

        ids = [session_id for session_id, _epoch, _owner in leases]
        result = _outcome(ids, await self.client.by_node(_meta_keys(ids), run))
        if refresh and not result.unwritten:
            # Only a refresh that reached every node counts (else the next renewal
            # tries again), so no key goes longer than a quarter window unrefreshed.
            self._refreshed_at = now
        return result

    async def remove(self, session_id: str, epoch: int) -> None:
        keys = [*session_keys(session_id), ended_key(session_id)]

        async def run() -> Any:
            return await self._remove(keys=keys, args=[epoch, self._ended_ttl_ms])

        await self.client.call(run, session_keys(session_id)[0])

    async def record_usage(self, session_id: str, entry: ResponseUsage) -> None:
        key = usage_key(session_id)

        async def run() -> None:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.rpush(key, entry.to_json())
                pipe.pexpire(key, milliseconds(self.limits.usage_ttl))
                await pipe.execute()

        await self.client.call(run, key)

    async def usage(self, session_id: str) -> list[ResponseUsage]:
        async def run() -> list[bytes | str]:
            result: list[bytes | str] = await self.redis.lrange(usage_key(session_id), 0, -1)
            return result

        # An entry twice is one batch written twice (its first answer lost): keep one.
        entries = dict.fromkeys(await self._read(run, usage_key(session_id), "usage ledger"))
        usage: list[ResponseUsage] = []
        for raw in entries:
            try:
                usage.append(ResponseUsage.from_json(raw))
            except (KeyError, TypeError, ValueError, RecursionError) as exc:
                # A damaged entry is left out of the ledger, not the whole ledger.
                log.error("usage ledger of %s: an entry left out (%r)", session_id, exc)
        return usage

    async def add_tool_calls(self, session_id: str, calls: Sequence[ToolCallRecord]) -> None:
        if not calls:
            return
        meta, _log, _partial, _lease, tools = session_keys(session_id)
        args: list[Any] = [self._meta_ttl_ms]
        for call in calls:
            pending = replace(call, status=ToolCallStatus.PENDING, output=None, error=None)
            args.append(call.call_id)
            args.append(compact_json(pending.to_dict()))

        async def run() -> Any:
            return await self._add_tool_calls(keys=[meta, tools], args=args)

        await self.client.call(run, meta)

    async def _settle(
        self, session_id: str, call_id: str, outcome: dict[str, Any]
    ) -> tuple[bool, ToolCallRecord | None] | None:
        """Run SETTLE_TOOL_CALL: (whether ``outcome`` was written, the call now: None
        when its stored entry does not read back)."""
        meta, _log, _partial, _lease, tools = session_keys(session_id)

        async def run() -> Any:
            return await self._settle_tool_call(
                keys=[meta, tools],
                args=[self._meta_ttl_ms, call_id, compact_json(outcome)],
            )

        # A key of another type answers the same every time: unreadable, not down.
        settled = await self._read(run, meta, "tool-call ledger")
        if settled is None:
            return None
        written, call, stored = settled
        try:
            return bool(written), read_tool_call(call, stored)
        except StoredDataUnreadable as exc:
            log.error("tool call %s of %s: %s", call_id, session_id, exc)
            return bool(written), None

    async def apply_tool_result(
        self, session_id: str, call_id: str, output: str | None, error: str | None
    ) -> tuple[ToolResultOutcome, ToolCallRecord | None]:
        outcome = {"status": ToolCallStatus.COMPLETED.value, "output": output, "error": error}
        settled = await self._settle(session_id, call_id, outcome)
        if settled is None:
            return ToolResultOutcome.UNKNOWN, None
        written, record = settled
        if written:
            return ToolResultOutcome.APPLIED, record
        if record is None:
            # Settled before, as nobody can now tell: this result is not applied.
            return ToolResultOutcome.CLOSED, None
        if record.status is ToolCallStatus.COMPLETED:
            return ToolResultOutcome.DUPLICATE, record
        return ToolResultOutcome.CLOSED, record

    async def close_tool_call(self, session_id: str, call_id: str, status: ToolCallStatus) -> bool:
        check_close_status(status)
        outcome = {"status": ToolCallStatus(status).value, "output": None, "error": None}
        settled = await self._settle(session_id, call_id, outcome)
        return settled is not None and settled[0]

    async def tool_calls(self, session_id: str) -> list[ToolCallRecord]:
        meta, _log, _partial, _lease, tools = session_keys(session_id)

        async def run() -> list[Any]:
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.exists(meta)
                pipe.hgetall(tools)
                result: list[Any] = await pipe.execute()
                return result

        live, fields = await self._read(run, meta, "tool-call ledger")
        if not live:
            return []
        ordered: list[tuple[int, ToolCallRecord]] = []
        for name, value in fields.items():
            if name.startswith(b"c:"):
                try:
                    order = tool_call_order(value)
                    record = read_tool_call(value, fields.get(b"r:" + name[2:]))
                except StoredDataUnreadable as exc:
                    # One damaged call is left out; the session's other calls still count.
                    log.error("tool calls of %s: %s left out (%s)", session_id, name[2:], exc)
                    continue
                ordered.append((order, record))
        ordered.sort(key=lambda item: item[0])
        return [record for _order, record in ordered]

    async def use_client_token(self, token_id: str, limit: int, ttl: float) -> bool:
        key = client_token_key(token_id)

        async def run() -> Any:
            return await self._use_client_token(keys=[key], args=[limit, milliseconds(ttl)])

        return bool(int(await self.client.call(run, key)))

    async def _read(self, run: Callable[[], Awaitable[T]], key: str, what: str) -> T:
        """``client.call(run, key)`` for a read a resume depends on: a script or command
        that failed on the session's own keys (a key of the wrong type) raises
        :class:`StoredDataUnreadable`, not a retry-later ``SessionStoreUnavailable``."""
        try:
            return await self.client.call(run, key)
        except SessionStoreUnavailable as exc:
            if is_command_error(exc.__cause__):
                raise StoredDataUnreadable(f"{what}: {exc.__cause__}") from None
            raise

    async def ready(self) -> bool:
        # One ping at a time, shared by every caller meanwhile: /readyz needs no
        # credentials, and a flood of probes must not open a connection each.
        if self._ready is None or self._ready.done():
            self._ready = asyncio.get_running_loop().create_task(self._ping())
        return await asyncio.shield(self._ready)

    async def _ping(self) -> bool:
        try:
            await self.client.call(self.redis.ping)
        except SessionStoreUnavailable:
            return False
        return True

    async def close(self) -> None:
        if self._ready is not None:
            self._ready.cancel()
        await self.client.close()


def _meta_keys(session_ids: Sequence[str]) -> list[str]:
    return [session_keys(session_id)[0] for session_id in session_ids]


def _answers(result: list[Any]) -> list[Any]:
    """A pipeline's answers, each session's own script error left in its place (so one
    damaged session does not fail the others' writes); any other error is raised."""
    for answer in result:
        if isinstance(answer, Exception) and not is_command_error(answer):
            raise answer
    return result


def _outcome(session_ids: Sequence[str], parts: list[tuple[list[int], Any]]) -> AppendResult:
    """What the scripts answered per session (1, -1 stale, -2 gone, or the error of a
    script that failed on the session's keys), per node; a node that was down
    (``None``) leaves its sessions unwritten."""
    outcome = AppendResult()
    for positions, codes in parts:
        for position, code in zip(positions, codes or [None] * len(positions), strict=True):
            session_id = session_ids[position]
            if code is None:
                outcome.unwritten.add(session_id)
            elif isinstance(code, ResponseError):
                outcome.refused[session_id] = str(code)
            elif int(code) == -1:
                outcome.stale.add(session_id)
            elif int(code) == -2:
                outcome.gone.add(session_id)
    return outcome
