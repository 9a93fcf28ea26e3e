"""Redis session store: any worker can resume any session.

Keys of a session (one hash slot, thanks to the ``{session-id}`` tag):

* ``wss:{id}:meta``    hash: token hash, created_at, epoch, owner, snapshots, log_bytes
* ``wss:{id}:log``     stream: one entry per event, entry id ``<seq>-0``
* ``wss:{id}:partial`` string: persisted text of the latest response
* ``wss:{id}:lease``   string: the owner's id, expiring unless renewed
* ``wss:{id}:usage``   list: the usage ledger, one JSON entry per response
* ``wss:{id}:tools``   hash: the tool-call ledger (layout in ``redis_scripts``),
  with the record's TTL, deleted with it

and one key per client token that opened sessions, ``wss:token:{jti}:sessions``
(the count, living as long as the token).

Every call has a bounded timeout and no retries: when Redis is down the
worker learns it at once and decides (keep streaming from memory, refuse new
sessions) instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from wsserver.store import redis_scripts
from wsserver.store.base import (
    AppendBatch,
    AppendResult,
    LogSlice,
    ResponseUsage,
    SessionRecord,
    SessionStoreUnavailable,
    StoreLimits,
    ToolCallRecord,
    ToolCallStatus,
    ToolResultOutcome,
    check_close_status,
)

T = TypeVar("T")


def _keys(session_id: str) -> tuple[str, str, str, str, str]:
    tag = "{" + session_id + "}"
    return (
        f"wss:{tag}:meta",
        f"wss:{tag}:log",
        f"wss:{tag}:partial",
        f"wss:{tag}:lease",
        f"wss:{tag}:tools",
    )


def deliver_swallowed_cancel() -> None:
    """Raise the cancellation redis-py swallowed, if it did.

    redis.asyncio sometimes absorbs a task's ``CancelledError`` mid-command and returns
    normally (seen with redis 8.1 in about 3 of 4 cancels; redis/redis-py#2028 and kin).
    A loop around such a call would then never end, and whoever awaits it (a router's
    or worker's shutdown) hangs. A cancel that was requested and not uncancelled is
    still counted by ``Task.cancelling()``: deliver it here.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _usage_key(session_id: str) -> str:
    return "wss:{" + session_id + "}:usage"


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


class RedisSessionStore:
    """The shared store."""

    shared = True

    def __init__(
        self, url: str, limits: StoreLimits | None = None, *, timeout: float = 0.5
    ) -> None:
        self.url = url
        self.limits = limits or StoreLimits()
        self.redis: Redis = Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            retry_on_timeout=False,
            decode_responses=False,
        )
        self._append = self.redis.register_script(redis_scripts.APPEND)
        self._claim = self.redis.register_script(redis_scripts.CLAIM)
        self._renew = self.redis.register_script(redis_scripts.RENEW)
        self._remove = self.redis.register_script(redis_scripts.REMOVE)
        self._add_tool_calls = self.redis.register_script(redis_scripts.ADD_TOOL_CALLS)
        self._settle_tool_call = self.redis.register_script(redis_scripts.SETTLE_TOOL_CALL)
        self._use_client_token = self.redis.register_script(redis_scripts.USE_CLIENT_TOKEN)
        self.round_trips = 0
        """Calls that went to Redis (a pipeline counts once)."""

    async def _call(self, operation: Callable[[], Awaitable[T]]) -> T:
        self.round_trips += 1
        try:
            result = await operation()
        except (RedisError, OSError, TimeoutError) as exc:
            deliver_swallowed_cancel()
            raise SessionStoreUnavailable(f"redis: {exc}") from exc
        deliver_swallowed_cancel()
        return result

    async def create(self, record: SessionRecord) -> None:
        meta, _log, _partial, lease, _tools = _keys(record.session_id)
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
                pipe.pexpire(meta, _ms(limits.session_ttl))
                pipe.set(lease, record.owner or "", px=_ms(limits.lease_ttl))
                await pipe.execute()

        await self._call(run)

    async def get(self, session_id: str) -> SessionRecord | None:
        meta, _log, partial, lease, _tools = _keys(session_id)

        async def run() -> list[Any]:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.hgetall(meta)
                pipe.get(partial)
                pipe.exists(lease)
                result: list[Any] = await pipe.execute()
                return result

        fields, partial_text, lease_live = await self._call(run)
        if not fields:
            return None
        return _record(session_id, fields, partial_text, bool(lease_live))

    async def claim(self, session_id: str, owner: str) -> SessionRecord | None:
        meta, _log, _partial, lease, tools = _keys(session_id)
        limits = self.limits

        async def run() -> Any:
            return await self._claim(
                keys=[meta, lease, tools],
                args=[owner, _ms(limits.lease_ttl), _ms(limits.session_ttl)],
            )

        claimed = await self._call(run)
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
            _ms(limits.session_ttl),
            _ms(limits.resume_window),
            _ms(limits.lease_ttl),
        )

        async def run() -> list[Any]:
            async with self.redis.pipeline(transaction=False) as pipe:
                for batch in batches:
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
                        len(batch.events),
                    ]
                    for seq, payload in batch.events:
                        args.append(seq)
                        args.append(payload)
                    await self._append(keys=list(_keys(batch.session_id)), args=args, client=pipe)
                for batch in batches:
                    if batch.remove:
                        # Same slot, same pipeline, after the append: the epoch check holds.
                        await self._remove(
                            keys=list(_keys(batch.session_id)), args=[batch.epoch], client=pipe
                        )
                for batch in batches:
                    if batch.usage:
                        key = _usage_key(batch.session_id)
                        pipe.rpush(key, *(entry.to_json() for entry in batch.usage))
                        pipe.pexpire(key, _ms(limits.usage_ttl))
                result: list[Any] = await pipe.execute()
                return result[: len(batches)]

        outcome = AppendResult()
        for batch, code in zip(batches, await self._call(run), strict=True):
            if int(code) == -1:
                outcome.stale.add(batch.session_id)
            elif int(code) == -2:
                outcome.gone.add(batch.session_id)
        return outcome

    async def read_log(self, session_id: str, after_seq: int) -> LogSlice:
        meta, log, _partial, _lease, _tools = _keys(session_id)

        async def run() -> list[Any]:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.xrange(log, min=f"({after_seq}-0", max="+")
                pipe.xrange(log, min="-", max="+", count=1)
                pipe.hget(meta, "stream")
                result: list[Any] = await pipe.execute()
                return result

        entries, oldest, stream_raw = await self._call(run)
        events = [(_seq_of(entry_id), fields[b"p"]) for entry_id, fields in entries]
        if oldest:
            first = _seq_of(oldest[0][0])
        else:
            stream = json.loads(stream_raw) if stream_raw else {}
            first = int(stream.get("last_seq", after_seq)) + 1
        return LogSlice(first, events)

    async def renew(self, leases: Sequence[tuple[str, int, str]]) -> AppendResult:
        if not leases:
            return AppendResult()
        limits = self.limits

        async def run() -> list[Any]:
            async with self.redis.pipeline(transaction=False) as pipe:
                for session_id, epoch, owner in leases:
                    await self._renew(
                        keys=list(_keys(session_id)),
                        args=[
                            epoch,
                            owner,
                            _ms(limits.session_ttl),
                            _ms(limits.resume_window),
                            _ms(limits.lease_ttl),
                        ],
                        client=pipe,
                    )
                result: list[Any] = await pipe.execute()
                return result

        outcome = AppendResult()
        for lease, code in zip(leases, await self._call(run), strict=True):
            if int(code) == -1:
                outcome.stale.add(lease[0])
            elif int(code) == -2:
                outcome.gone.add(lease[0])
        return outcome

    async def remove(self, session_id: str, epoch: int) -> None:
        async def run() -> Any:
            return await self._remove(keys=list(_keys(session_id)), args=[epoch])

        await self._call(run)

    async def record_usage(self, session_id: str, entry: ResponseUsage) -> None:
        key = _usage_key(session_id)

        async def run() -> None:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.rpush(key, entry.to_json())
                pipe.pexpire(key, _ms(self.limits.usage_ttl))
                await pipe.execute()

        await self._call(run)

    async def usage(self, session_id: str) -> list[ResponseUsage]:
        async def run() -> list[bytes | str]:
            result: list[bytes | str] = await self.redis.lrange(_usage_key(session_id), 0, -1)
            return result

        return [ResponseUsage.from_json(raw) for raw in await self._call(run)]

    async def add_tool_calls(self, session_id: str, calls: Sequence[ToolCallRecord]) -> None:
        if not calls:
            return
        meta, _log, _partial, _lease, tools = _keys(session_id)
        args: list[Any] = [_ms(self.limits.session_ttl)]
        for call in calls:
            pending = replace(call, status=ToolCallStatus.PENDING, output=None, error=None)
            args.append(call.call_id)
            args.append(_json(pending.to_dict()))

        async def run() -> Any:
            return await self._add_tool_calls(keys=[meta, tools], args=args)

        await self._call(run)

    async def _settle(
        self, session_id: str, call_id: str, outcome: dict[str, Any]
    ) -> tuple[bool, ToolCallRecord] | None:
        """Run SETTLE_TOOL_CALL: (whether ``outcome`` was written, the call now)."""
        meta, _log, _partial, _lease, tools = _keys(session_id)

        async def run() -> Any:
            return await self._settle_tool_call(
                keys=[meta, tools], args=[_ms(self.limits.session_ttl), call_id, _json(outcome)]
            )

        settled = await self._call(run)
        if settled is None:
            return None
        written, call, stored = settled
        return bool(written), _tool_call(call, stored)

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
        if record.status is ToolCallStatus.COMPLETED:
            return ToolResultOutcome.DUPLICATE, record
        return ToolResultOutcome.CLOSED, record

    async def close_tool_call(self, session_id: str, call_id: str, status: ToolCallStatus) -> bool:
        check_close_status(status)
        outcome = {"status": ToolCallStatus(status).value, "output": None, "error": None}
        settled = await self._settle(session_id, call_id, outcome)
        return settled is not None and settled[0]

    async def tool_calls(self, session_id: str) -> list[ToolCallRecord]:
        meta, _log, _partial, _lease, tools = _keys(session_id)

        async def run() -> list[Any]:
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.exists(meta)
                pipe.hgetall(tools)
                result: list[Any] = await pipe.execute()
                return result

        live, fields = await self._call(run)
        if not live:
            return []
        ordered: list[tuple[int, ToolCallRecord]] = []
        for name, value in fields.items():
            if name.startswith(b"c:"):
                order = json.loads(value)[0]
                ordered.append((int(order), _tool_call(value, fields.get(b"r:" + name[2:]))))
        ordered.sort(key=lambda item: item[0])
        return [record for _order, record in ordered]

    async def use_client_token(self, token_id: str, limit: int, ttl: float) -> bool:
        key = "wss:token:{" + token_id + "}:sessions"

        async def run() -> Any:
            return await self._use_client_token(keys=[key], args=[limit, _ms(ttl)])

        return bool(int(await self._call(run)))

    async def ready(self) -> bool:
        try:
            await self._call(self.redis.ping)
        except SessionStoreUnavailable:
            return False
        return True

    async def close(self) -> None:
        await self.redis.aclose()


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"))


def _tool_call(call: bytes, outcome: bytes | None) -> ToolCallRecord:
    """A ledger entry from its stored ``[order, record]`` and outcome, if any."""
    data: dict[str, Any] = json.loads(call)[1]
    if outcome is not None:
        data.update(json.loads(outcome))
    return ToolCallRecord.from_dict(data)


def _seq_of(entry_id: bytes) -> int:
    return int(entry_id.split(b"-", 1)[0])


def _record(
    session_id: str, fields: dict[bytes, bytes], partial: bytes | None, lease_live: bool
) -> SessionRecord:
    return SessionRecord(
        session_id=session_id,
        token_hash=fields[b"token_hash"].decode(),
        created_at=float(fields[b"created_at"]),
        epoch=int(fields[b"epoch"]),
        owner=fields.get(b"owner", b"").decode() or None,
        owner_live=lease_live,
        conversation=json.loads(fields.get(b"conversation", b"{}")),
        stream=json.loads(fields.get(b"stream", b"{}")),
        partial_text=partial.decode() if partial else "",
        principal=fields.get(b"principal", b"anonymous").decode(),
    )
