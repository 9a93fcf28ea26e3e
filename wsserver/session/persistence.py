"""Batched writes of session events, state and usage to the session store.

Sessions mark themselves dirty as they number events; every ``interval`` the
persister gathers what every dirty session has and writes it all in one
pipelined call (one scripted append per session), never one round trip per
token. A failed write keeps the events for the next try; a write rejected for
a stale epoch tells the session it has moved to another worker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import msgpack

from protocol.event_repair import void_event
from protocol.events import RESPONSE_CREATED, TEXT_DELTA, Event
from protocol.session import ServerSession
from protocol.session.responses import ResponseState
from protocol.snapshot import conversation_snapshot, stream_snapshot
from wsserver.store.base import (
    AppendBatch,
    AppendResult,
    ResponseUsage,
    SessionStore,
    SessionStoreUnavailable,
)

log = logging.getLogger(__name__)

_RETRY_MIN = 0.25
_SESSIONS_PER_CALL = 50
_RETRY_MAX = 2.0


class Persistent(Protocol):
    """What the persister needs from a session runtime."""

    @property
    def session_id(self) -> str: ...

    @property
    def journal(self) -> SessionJournal: ...

    def moved(self) -> None:
        """The store says another worker owns the session now."""
        ...

    def record_lost(self) -> None:
        """The store no longer has the session; this owner writes it again."""
        ...


@dataclass(slots=True)
class SessionJournal:
    """A session's writes not yet in the store, and what the store last saw."""

    session: ServerSession
    epoch: int
    owner: str
    log_events: bool = True
    """Whether the store keeps a replay log (a shared store) or only state and usage."""
    conversation_version: int = -1
    partial_bytes: int | None = None
    """UTF-8 bytes of the partial text the store has from this journal (None: unknown)."""
    pending: list[Event] = field(default_factory=list)
    usage: list[ResponseUsage] = field(default_factory=list)
    remove: bool = False
    """The session ended: the next batch deletes it from the store."""
    final: bool = False
    """The local runtime is going away: a non-shared store needs the snapshot now."""
    acked_written: int = 0
    """The acked seq the store last trimmed its log to: a write sends a newer one only
    (the trim is a read of the log in the write's script)."""

    def settle(
        self,
        *,
        include_unsent: bool = False,
        ended: Callable[[ResponseState], None] | None = None,
    ) -> bool:
        """Queue the usage of ended responses for the ledger (each once); whether any ended.

        ``ended`` hears of each response the first time its usage is queued.
        """
        session = self.session
        responses = session.take_settled()
        if include_unsent:
            responses += [r for r in session.unsettled() if r.done]
        for response in responses:
            if response.usage_recorded:
                continue
            response.usage_recorded = True
            status = response.status.value if response.status else "unknown"
            self.usage.append(ResponseUsage(response.id, status, response.reason, response.usage()))
            if ended is not None:
                ended(response)
        return bool(responses)

    def build(self) -> AppendBatch | None:
        """The batch to write now, or ``None`` if nothing changed."""
        if self.log_events:
            self.pending.extend(self.session.take_unpersisted())
        limit = self.session.limits.replay_max_events
        if len(self.pending) > limit:
            # The store was unreachable for long: keep what a resume could still use.
            del self.pending[: len(self.pending) - limit]
        version = self.session.conversation.version
        if not self.log_events and not self.final:
            # A store only this process reads needs the conversation only once the
            # runtime is gone (for snapshots); meanwhile the runtime has it.
            version = self.conversation_version
        if (
            not self.pending
            and not self.usage
            and not self.remove
            and version == self.conversation_version
        ):
            return None
        batch = AppendBatch(
            self.session.session_id,
            self.epoch,
            self.owner,
            [(e.seq, _packed(e)) for e in self.pending],
            stream_snapshot(self.session).to_dict(),
            usage=list(self.usage),
            remove=self.remove,
        )
        acked = self.session.replay.acked_seq
        if acked > self.acked_written and self.log_events:
            batch.acked_seq = acked
        if version != self.conversation_version:
            batch.conversation = conversation_snapshot(self.session).to_dict()
            batch.stream = stream_snapshot(self.session).to_dict()
        reset, appended = _partial_text(self.pending)
        batch.partial_reset = reset
        batch.partial_append = appended
        batch.partial_offset = 0 if reset else self.partial_bytes
        return batch

    def written(self, batch: AppendBatch) -> None:
        """The batch is in the store."""
        del self.pending[: len(batch.events)]
        del self.usage[: len(batch.usage)]
        if batch.partial_offset is not None:
            self.partial_bytes = batch.partial_offset + len(batch.partial_append.encode())
        if batch.remove:
            self.remove = False
        if batch.conversation is not None:
            self.conversation_version = int(batch.conversation["version"])
        self.acked_written = max(self.acked_written, batch.acked_seq)


def _partial_text(events: Iterable[Event]) -> tuple[bool, str]:
    """Whether the latest response's text restarts in these events, and the text to add."""
    reset = False
    parts: list[str] = []
    for event in events:
        if event.type == RESPONSE_CREATED:
            reset = True
            parts.clear()
        elif event.type == TEXT_DELTA:
            parts.append(str(event.fields["delta"]))
    return reset, "".join(parts)


class Persister:
    """The worker's single writer to the session store."""

    def __init__(self, store: SessionStore, *, interval: float) -> None:
        self.store = store
        self.interval = interval
        self.store_up = True
        self.flushes = 0
        self.events_written = 0
        self._dirty: dict[str, Persistent] = {}
        self._wake = asyncio.Event()
        self._retry_delay = _RETRY_MIN
        self._held: dict[str, Persistent] = {}
        """Refused sessions waiting out their retry delay: no write is tried meanwhile."""

    def mark(self, runtime: Persistent) -> None:
        """The runtime has something to write."""
        if runtime.session_id in self._held:
            return  # written with the rest when its retry delay is over
        self._dirty[runtime.session_id] = runtime
        self._wake.set()

    async def run(self) -> None:
        """Flush dirty sessions every ``interval`` while there are any."""
        while True:
            await self._wake.wait()
            # A short window lets many tokens and sessions share one round trip.
            await asyncio.sleep(self.interval)
            self._wake.clear()
            if not await self.flush():
                await asyncio.sleep(self._retry_delay)
                self._retry_delay = min(_RETRY_MAX, self._retry_delay * 2)
                self._wake.set()

    async def flush(self) -> bool:
        """Write everything pending; ``False`` if the store (or part of it) was unreachable."""
        dirty = list(self._dirty.values())
        self._dirty = {}
        complete = True
        for start in range(0, len(dirty), _SESSIONS_PER_CALL):
            if start:
                # Building and sending a thousand sessions' batches takes a while: let
                # readers (interrupts) and writers run between chunks.
                await asyncio.sleep(0)
            runtimes = dirty[start : start + _SESSIONS_PER_CALL]
            chunk = [(r, b) for r in runtimes if (b := _build(r)) is not None]
            if not chunk:
                continue
            try:
                result = await self.store.append([b for _, b in chunk])
            except SessionStoreUnavailable as exc:
                if self.store_up:
                    log.warning("session store unavailable, keeping events in memory: %s", exc)
                self.store_up = False
                for runtime in dirty[start:]:
                    self._dirty.setdefault(runtime.session_id, runtime)
                return False
            self._written(chunk, result)
            self._hold_refused(chunk, result)
            if result.unwritten:
                # One shard of a cluster is down: the rest were written; retry these.
                if complete:
                    log.warning(
                        "session store partly unavailable, keeping %d sessions' events in memory",
                        len(result.unwritten),
                    )
                complete = False
                for runtime, _batch in chunk:
                    if runtime.session_id in result.unwritten:
                        self._dirty.setdefault(runtime.session_id, runtime)
        return complete

    def _written(self, chunk: list[tuple[Persistent, AppendBatch]], result: AppendResult) -> None:
        if not self.store_up:
            log.warning("session store reachable again")
        self.store_up = True
        self._retry_delay = _RETRY_MIN
        self.flushes += 1
        for runtime, batch in chunk:
            if runtime.session_id in result.unwritten or runtime.session_id in result.refused:
                continue
            if runtime.session_id in result.stale:
                runtime.moved()
            elif runtime.session_id in result.gone:
                runtime.record_lost()
            else:
                runtime.journal.written(batch)
                self.events_written += len(batch.events)

    def _hold_refused(
        self, chunk: list[tuple[Persistent, AppendBatch]], result: AppendResult
    ) -> None:
        """Keep a refused session's writes and try them again after the longest retry
        delay, apart: the other sessions' writes go on at their own pace."""
        if not result.refused:
            return
        loop = asyncio.get_running_loop()
        for runtime, _batch in chunk:
            error = result.refused.get(runtime.session_id)
            if error is None:
                continue
            if runtime.session_id in self._held:
                continue
            # Logged once per retry: at most one line per damaged session every 2 s.
            log.error(
                "the store refused session %s's writes (its stored data is damaged?); "
                "keeping them in memory, next try in %g s: %s",
                runtime.session_id,
                _RETRY_MAX,
                error,
            )
            self._held[runtime.session_id] = runtime
            loop.call_later(_RETRY_MAX, self._release, runtime.session_id)

    def _release(self, session_id: str) -> None:
        runtime = self._held.pop(session_id, None)
        if runtime is not None:
            self.mark(runtime)


def _packed(event: Event) -> bytes:
    """The event as the replay log stores it; voided first if msgpack cannot carry it
    (the writer would void it too), so one bad event never stops the store writer."""
    try:
        return msgpack.packb(event.to_message())
    except (UnicodeEncodeError, TypeError, ValueError, OverflowError):
        void_event(event)
        return msgpack.packb(event.to_message())


def _build(runtime: Persistent) -> AppendBatch | None:
    """A session's next batch; one session's failure never stops the writer for the rest."""
    try:
        return runtime.journal.build()
    except Exception as exc:
        log.error(
            "could not build the store batch of session %s: %s: %s",
            runtime.session_id,
            type(exc).__name__,
            exc,
        )
        return None
