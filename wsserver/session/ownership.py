"""This worker as a session's owner: ending it, letting it go, and keeping its record.

The owner ends the session (an explicit close, or the resume window passing), gives it
up at once when the store says another worker took it, ends the response a dead owner
left behind (a takeover), stops the running response when a drain runs out of time,
and writes the record again when the store lost it. The worker, the drain and the
store writer call these on a :class:`wsserver.session.runtime.SessionRuntime` (of
which :class:`SessionOwnership` is the base); the runtime keeps all the state (its
``__slots__``), and nothing here runs per token.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from protocol.codes import CloseCode
from protocol.session import ServerSession, SessionCore
from protocol.session.inputs import Input, ResponseLost, SessionEnding, SessionMoved, StopRunning
from protocol.session.responses import ResponseState
from wsserver.session.context import RuntimeContext
from wsserver.session.persistence import SessionJournal
from wsserver.session.recreate import recreate_record
from wsserver.session.timers import SessionTimers
from wsserver.telemetry import SessionTelemetry
from wsserver.transport.base import Transport


class _OwnedRuntime(Protocol):
    """The parts of the runtime the owner's actions use."""

    core: SessionCore
    context: RuntimeContext
    journal: SessionJournal
    telemetry: SessionTelemetry
    transport: Transport | None
    token_hash: str
    principal: str
    _timers: SessionTimers | None
    _recreating: bool
    _recreate_task: asyncio.Task[None] | None

    @property
    def session(self) -> ServerSession: ...

    @property
    def session_id(self) -> str: ...

    def feed(self, event: Input) -> None: ...

    def persist(self) -> None: ...

    def end(self, *, remove_from_store: bool) -> None: ...

    async def _recreate(self) -> None: ...


class SessionOwnership:
    """What this worker, as the owner, does with a live session (a base of the runtime)."""

    __slots__ = ()  # the runtime's slots hold everything

    # Slots of the runtime that these methods assign (typed here, where they are assigned).
    transport: Transport | None
    _recreating: bool
    _recreate_task: asyncio.Task[None] | None

    def stop_running(self: _OwnedRuntime, reason: str) -> None:
        """End the running response ``incomplete`` (a drain ran out of time)."""
        self.feed(StopRunning(reason))

    def end_lost_response(self: _OwnedRuntime, response: ResponseState, reason: str) -> None:
        """End a response whose worker is gone, with the usage the store had."""
        self.feed(ResponseLost(response.id, reason))

    def expire(self: _OwnedRuntime) -> None:
        """The resume window passed: stop, record usage, drop the local runtime.

        The store keeps the record (and its snapshot) until its own TTL.
        """
        self.end(remove_from_store=False)

    def end(self: _OwnedRuntime, *, remove_from_store: bool) -> None:
        """Stop generating, record usage, persist the last events, forget the session."""
        if self.core.closed:
            return
        self.feed(SessionEnding())
        self.telemetry.session_ended("ended" if remove_from_store else "expired", self.session)
        if self._timers is not None:
            self._timers.cancel_all()
        self.journal.final = True
        self.persist()
        self.context.host.session_ended(self, remove_from_store=remove_from_store)

    def moved(self: _OwnedRuntime) -> None:
        """Another worker took the session over: stop at once, say nothing more."""
        if self.core.closed:
            return
        self.feed(SessionMoved())
        self.telemetry.session_ended("moved", self.session)
        if self._timers is not None:
            self._timers.cancel_all()
        # Let the transport go first: its close is no departure of this session.
        transport, self.transport = self.transport, None
        if transport is not None:
            transport.close(CloseCode.SESSION_MOVED, "session moved to another worker")
        self.context.host.session_ended(self, remove_from_store=False)

    def record_lost(self: _OwnedRuntime) -> None:
        """The store lost the session (expired idle, or Redis restarted empty): write it again."""
        if self.core.closed or self._recreating:
            return
        self._recreating = True
        self._recreate_task = asyncio.get_running_loop().create_task(self._recreate())

    async def _recreate(self: _OwnedRuntime) -> None:
        try:
            await recreate_record(
                self.context.store,
                self.session,
                self.journal,
                token_hash=self.token_hash,
                owner=self.context.worker_id,
                principal=self.principal,
            )
        finally:
            self._recreating = False
            self.persist()
