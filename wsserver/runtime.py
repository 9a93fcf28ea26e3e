"""The session runtime: drives a sans-I/O :class:`ServerSession` with real tasks.

It owns the engine generation of the running response, the grace timer of a
detached session and its expiry timer. A connection attaches to it; the
runtime outlives connections.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from protocol.errors import ProtocolViolation
from protocol.messages import (
    Ack,
    ClientMessage,
    InputText,
    ResponseCancel,
    ResponseCreate,
    ResponseInterrupt,
)
from protocol.server_session import ResponseState, ResponseStatus, ServerSession
from wsserver.engine.base import (
    Engine,
    EngineOverloaded,
    FinishReason,
    Generation,
    GenerationRequest,
)
from wsserver.store.base import ResponseUsage, SessionStore

if TYPE_CHECKING:
    from wsserver.connection import Connection

log = logging.getLogger(__name__)


class Departure(enum.Enum):
    """How a connection left its session."""

    DROPPED = "dropped"
    """Lost without a goodbye (or closed with a resume code): the running response
    keeps generating for the grace period, the session stays resumable."""
    CLOSED = "closed"
    """The client closed with a code other than 1000: the running response is aborted
    at once, the session stays resumable until its TTL."""
    ENDED = "ended"
    """The client closed with 1000, or the server closed with a terminal code: the
    running response is aborted and the session is over."""


_FINISH_STATUS = {
    FinishReason.STOP: (ResponseStatus.COMPLETED, None),
    FinishReason.LENGTH: (ResponseStatus.INCOMPLETE, "max_output_tokens"),
    FinishReason.ERROR: (ResponseStatus.FAILED, "engine_error"),
    FinishReason.ABORTED: (ResponseStatus.CANCELLED, "engine_aborted"),
}


class SessionRuntime:
    """One live session on this worker."""

    def __init__(
        self,
        session: ServerSession,
        engine: Engine,
        store: SessionStore,
        *,
        grace_period: float,
        session_ttl: float,
        on_expire: Callable[[SessionRuntime], None],
    ) -> None:
        self.session = session
        self.engine = engine
        self.store = store
        self.grace_period = grace_period
        self.session_ttl = session_ttl
        self.connection: Connection | None = None
        self._on_expire = on_expire
        self._generation: Generation | None = None
        self._consumer: asyncio.Task[None] | None = None
        self._grace_timer: asyncio.TimerHandle | None = None
        self._expiry_timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[None]] = set()
        self.closed = False

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self.session.session_id

    # -- connections -----------------------------------------------------

    def attach(self, connection: Connection) -> Connection | None:
        """Bind a connection; returns the connection it replaced, if any."""
        self._cancel_timers()
        previous = self.connection
        self.connection = connection
        return previous

    def detach(
        self, connection: Connection, departure: Departure, *, reason: str = "client_closed"
    ) -> None:
        """A connection went away; see :class:`Departure` for what happens to the session."""
        if self.connection is not connection:
            return
        self.connection = None
        active = self.session.active
        if departure is Departure.DROPPED:
            loop = asyncio.get_running_loop()
            if active is not None:
                self._grace_timer = loop.call_later(self.grace_period, self._grace_expired)
            self._expiry_timer = loop.call_later(self.session_ttl, self.expire)
            return
        if active is not None:
            self._stop(active, ResponseStatus.CANCELLED, reason=reason)
        if departure is Departure.ENDED:
            self.expire()
        else:
            self._expiry_timer = asyncio.get_running_loop().call_later(
                self.session_ttl, self.expire
            )

    def wake(self) -> None:
        """Tell the attached connection's writer there is something to send."""
        connection = self.connection
        if connection is not None:
            connection.wake()

    # -- client messages -------------------------------------------------

    def handle(self, message: ClientMessage) -> None:
        """Apply a validated client message; a violation becomes an in-band error."""
        try:
            self._dispatch(message)
        except ProtocolViolation as violation:
            if violation.request_id is None:
                violation.request_id = message.id
            self.session.queue_error(violation)
        self.wake()

    def _dispatch(self, message: ClientMessage) -> None:
        session = self.session
        if isinstance(message, InputText):
            session.add_user_text(message.text)
        elif isinstance(message, ResponseCreate):
            session.check_idle()
            if message.input is not None:
                session.add_user_text(message.input)
            self._start(session.begin_response(message.max_output_tokens, message.id))
        elif isinstance(message, ResponseInterrupt):
            response = session.check_active(message.response_id)
            self._stop(
                response,
                ResponseStatus.INTERRUPTED,
                reason="client",
                rendered_chars=message.rendered_chars,
            )
        elif isinstance(message, ResponseCancel):
            response = session.check_active(message.response_id)
            self._stop(response, ResponseStatus.CANCELLED, reason="client")
        elif isinstance(message, Ack):
            session.ack(message.seq)

    # -- generation ------------------------------------------------------

    def _start(self, response: ResponseState) -> None:
        request = GenerationRequest(
            request_id=f"{self.session_id}/{response.id}",
            prompt=self.session.history(),
            max_output_tokens=response.max_output_tokens,
        )
        try:
            generation = self.engine.submit(request)
        except EngineOverloaded:
            self.session.end_response(response, ResponseStatus.FAILED, reason="engine_overloaded")
            return
        self._generation = generation
        self._consumer = asyncio.create_task(
            self._consume(response, generation), name=f"generation {request.request_id}"
        )

    async def _consume(self, response: ResponseState, generation: Generation) -> None:
        session = self.session
        limit = session.limits.outbox_max_bytes
        try:
            async for chunk in generation:
                session.record_output(response, chunk.text, chunk.tokens)
                if session.outbox.nbytes > limit:
                    self._outbox_full()
                self.wake()
        except Exception:
            log.exception("generation %s failed", response.id)
            generation.abort()
            self._end(response, ResponseStatus.FAILED, reason="engine_error")
        else:
            reason = generation.finish_reason or FinishReason.STOP
            status, why = _FINISH_STATUS[reason]
            self._end(response, status, reason=why)
        finally:
            if self._generation is generation:
                self._generation = None
                self._consumer = None
            self.wake()

    def _stop(
        self,
        response: ResponseState,
        status: ResponseStatus,
        *,
        reason: str,
        rendered_chars: int | None = None,
    ) -> None:
        """Abort the engine first (no more tokens), then end the response."""
        generation = self._generation
        if generation is not None:
            generation.abort()
        self._end(response, status, reason=reason, rendered_chars=rendered_chars)

    def _end(
        self,
        response: ResponseState,
        status: ResponseStatus,
        *,
        reason: str | None,
        rendered_chars: int | None = None,
    ) -> None:
        generation = self._generation
        self.session.end_response(
            response,
            status,
            reason=reason,
            input_tokens=generation.input_tokens if generation is not None else None,
            generated_tokens=generation.generated_tokens if generation is not None else None,
            rendered_chars=rendered_chars,
        )
        self.wake()

    def _outbox_full(self) -> None:
        connection = self.connection
        if connection is not None:
            connection.close_slow_consumer()
        else:
            # Nobody is reading: number the backlog into the bounded replay buffer.
            self.session.flush()

    # -- timers ----------------------------------------------------------

    def _grace_expired(self) -> None:
        self._grace_timer = None
        active = self.session.active
        if self.connection is None and active is not None:
            self._stop(active, ResponseStatus.INCOMPLETE, reason="client_gone")
            # Nobody may come back for the response.done: record usage now.
            self.settle(include_unsent=True)

    def expire(self) -> None:
        """End the session: abort generation, record usage, forget it."""
        if self.closed:
            return
        self.closed = True
        self._cancel_timers()
        active = self.session.active
        if active is not None:
            self._stop(active, ResponseStatus.INCOMPLETE, reason="session_expired")
        self.settle(include_unsent=True)
        self._on_expire(self)

    def _cancel_timers(self) -> None:
        for timer in (self._grace_timer, self._expiry_timer):
            if timer is not None:
                timer.cancel()
        self._grace_timer = self._expiry_timer = None

    # -- usage -----------------------------------------------------------

    def settle(self, *, include_unsent: bool = False) -> None:
        """Write the usage of finished responses to the store's ledger."""
        responses = self.session.take_settled()
        if include_unsent:
            responses += [r for r in self.session.unsettled() if r.done]
        for response in responses:
            if response.usage_recorded:
                continue
            response.usage_recorded = True
            entry = ResponseUsage(
                response.id,
                response.status.value if response.status else "unknown",
                response.reason,
                response.usage(),
            )
            task = asyncio.create_task(self._record(entry))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _record(self, entry: ResponseUsage) -> None:
        try:
            await self.store.record_usage(self.session_id, entry)
        except Exception:
            log.exception("could not record usage of %s", entry.response_id)
