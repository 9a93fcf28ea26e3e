"""The session runtime: executes the effects of one session's core with real tasks.

Everything that happens to a session (a client message, engine output, a
timer, a store answer, a voice event, the transport leaving) becomes an input
of its :class:`protocol.session.core.SessionCore`; the runtime executes the
effects the core returns, in order, and decides nothing itself. It owns the
running engine generation, the timers, the tool ledger's store calls and the
journal of writes to the store, and talks to a :class:`Transport`, never to
the WebSocket itself. The runtime outlives transports. Two bases hold parts of
its behaviour (its state stays in its own slots): what it does as the session's
owner (end, expire, give up on a move, write a lost record again) is
:class:`wsserver.session.ownership.SessionOwnership`, its input audio
:class:`wsserver.session.voice.VoiceHandling`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from time import monotonic
from typing import Any

from protocol.errors import ProtocolViolation
from protocol.events import Event
from protocol.messages import AudioSettings
from protocol.session import ServerSession, SessionCore
from protocol.session.core import WAKE_ALONE
from protocol.session.effects import Effect, StartGeneration
from protocol.session.inputs import (
    Departure,
    EngineFinished,
    GenerationRefused,
    GenerationStarted,
    Input,
    InternalFailure,
    Refused,
    SessionMessage,
    TimerFired,
    TimerKind,
    TransportAttached,
    TransportDeparted,
)
from protocol.session.numbering import number_next
from wsserver.engine.base import EngineOverloaded, FinishReason, Generation, OutputChunk
from wsserver.frontdoor.principal import ANONYMOUS_ID
from wsserver.session.context import ResponseSink, RuntimeContext, RuntimeHost, core_settings
from wsserver.session.executors import EXECUTORS
from wsserver.session.ledger import ToolLedger
from wsserver.session.ownership import SessionOwnership
from wsserver.session.persistence import SessionJournal
from wsserver.session.timers import SessionTimers
from wsserver.session.voice import VoiceHandling, VoiceInput
from wsserver.telemetry import SessionTelemetry
from wsserver.telemetry.context import response_context
from wsserver.transport.base import Transport

log = logging.getLogger(__name__)

_STOPS = frozenset({"response.interrupt", "response.cancel"})
"""Client messages that stop the running response (their latency to response.done is timed)."""

__all__ = ["Departure", "RuntimeContext", "RuntimeHost", "SessionRuntime"]


class SessionRuntime(SessionOwnership, VoiceHandling):
    """One live session on this worker."""

    __slots__ = (
        "_generation",
        "_ledger",
        "_recreate_task",
        "_recreating",
        "_timers",
        "context",
        "core",
        "engine",
        "journal",
        "lost_after_seq",
        "meter",
        "principal",
        "telemetry",
        "token_hash",
        "transport",
        "voice",
    )

    def __init__(
        self,
        session: ServerSession,
        context: RuntimeContext,
        *,
        token_hash: str,
        epoch: int,
        principal: str = ANONYMOUS_ID,
    ) -> None:
        self.principal = principal
        self.context = context
        self.engine = context.engine
        self.token_hash = token_hash
        shared = context.store.shared
        self.journal = SessionJournal(session, epoch, context.worker_id, log_events=shared)
        # A store only this process reads needs no copy of every event: the replay
        # buffer here is the log. It still gets the conversation, state and usage.
        session.keep_unpersisted = shared
        self.core = SessionCore(session, core_settings(context))
        self.telemetry = SessionTelemetry(session.session_id)
        self.transport: Transport | None = None
        self._generation: Generation | None = None
        self._recreating = False
        self._recreate_task: asyncio.Task[None] | None = None
        self.lost_after_seq: int | None = None
        """Set by a takeover whose client had seen unstored events (told once, at ready)."""
        # Made when first needed: most sessions are idle, and thousands live per worker.
        self._timers: SessionTimers | None = None
        self._ledger: ToolLedger | None = None
        self.voice: VoiceInput | None = None
        self.meter = context.metrics.session_meter()
        if session.audio is not None:
            audio = AudioSettings.model_validate(session.audio)
            self.voice = VoiceInput(audio, context.vad, context.audio_limits)

    @property
    def timers(self) -> SessionTimers:
        """The session's timers (grace, expiry, tool wait)."""
        timers = self._timers
        if timers is None:
            timers = self._timers = SessionTimers(self._timer_fired)
        return timers

    def cancel_timer(self, kind: TimerKind) -> None:
        """Stop the timer of ``kind`` if one is armed."""
        if self._timers is not None:
            self._timers.cancel(kind)

    def _timer_fired(self, kind: TimerKind) -> None:
        try:
            self.feed(TimerFired(kind))
        except Exception:
            active = self.core.session.active
            log.exception("%s timer of %s failed", kind.value, self.session_id)
            if active is not None:
                self._failed(active.id, f"{kind.value} timer")

    @property
    def ledger(self) -> ToolLedger:
        """Runs the session's tool-ledger store calls, in order."""
        ledger = self._ledger
        if ledger is None:
            ledger = self._ledger = ToolLedger(
                self.context.store, self.core.session.session_id, self.feed
            )
        return ledger

    @property
    def session(self) -> ServerSession:
        """The session's state (read by the transport, the persister and the worker)."""
        return self.core.session

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self.core.session.session_id

    @property
    def epoch(self) -> int:
        """The fencing epoch this worker holds for the session."""
        return self.journal.epoch

    @property
    def closed(self) -> bool:
        """Whether the session ended or moved here."""
        return self.core.closed

    # -- the core --------------------------------------------------------------

    def feed(self, event: Input) -> None:
        """Give the core one input and execute the effects it returns, in order."""
        # The generation itself gives the counts: read only if a response ends now.
        self.execute(self.core.handle(event, time.monotonic(), self._generation))

    def execute(self, effects: Sequence[Effect]) -> None:
        """Carry out effects of the core, in order."""
        for effect in effects:
            EXECUTORS[type(effect)](self, effect)

    def persist(self) -> None:
        """Schedule the session's new events and state for the store."""
        self.context.persister.mark(self)

    def events_numbered(self) -> None:
        """Events were numbered: they go to a shared store's log."""
        if self.journal.log_events:
            self.context.persister.mark(self)

    # -- transports --------------------------------------------------------------

    def attach(self, transport: Transport) -> Transport | None:
        """Bind a transport; returns the one it replaced, if any."""
        previous = self.transport
        self.transport = transport
        self.meter.transport_attached()
        self.feed(TransportAttached())
        return previous

    def detach(
        self, transport: Transport, departure: Departure, *, reason: str = "client_closed"
    ) -> None:
        """A transport went away; see :class:`Departure` for what happens to the session."""
        if self.transport is not transport:
            return
        self.transport = None
        self.telemetry.departure = reason
        self.feed(TransportDeparted(departure, reason))

    def handle(self, message: SessionMessage) -> None:
        """A validated client message of the session (the reader never waits here)."""
        # A stop with nothing running stops nothing (else the next done is timed from it).
        if message.type in _STOPS and self.core.session.active is not None:
            self.meter.stop_requested(message.type)
        self.feed(message)

    def reject(self, violation: ProtocolViolation) -> None:
        """Answer a refused client frame in-band, sequenced with the session's events."""
        self.feed(Refused(violation))

    def next_event(self) -> Event | None:
        """The next event for the transport to send, numbered (and kept for replay)."""
        # Once per frame: straight to the numbering (ServerSession.next_event's body).
        event = number_next(self.core.session)
        if event is not None and self.journal.log_events:
            # Numbered events go to the shared store's log in the next batch, sent or not.
            self.context.persister.mark(self)
        return event

    @property
    def last_seq(self) -> int:
        """Seq of the newest numbered event (heartbeats carry it)."""
        return self.core.session.last_seq

    @property
    def has_unsent(self) -> bool:
        """Whether events wait in the outbox for the writer."""
        return bool(self.core.session.outbox)

    @property
    def acked_seq(self) -> int:
        """The highest seq the client acknowledged."""
        return self.core.session.replay.acked_seq

    def pending_tool_calls(self) -> list[dict[str, Any]]:
        """Emitted calls without a result, for ``session.ready`` after a resume."""
        return [c.announcement() for c in self.core.session.tools.pending()]

    def wake(self) -> None:
        """Tell the attached transport's writer there is something to send."""
        transport = self.transport
        if transport is not None:
            transport.wake()

    # -- the engine --------------------------------------------------------------

    def start_generation(self, effect: StartGeneration) -> None:
        request = effect.request
        self.meter.generation_started()
        self.telemetry.generation_started(effect.response_id)
        try:
            # In a context naming the response: the engine's tasks log with its ids.
            generation = response_context(self.session_id, effect.response_id).run(
                self.engine.submit, request, ResponseSink(self, effect.response_id)
            )
        except EngineOverloaded:
            self.feed(GenerationRefused(effect.response_id, overloaded=True))
            return
        except Exception:
            log.exception("engine refused %s", request.request_id)
            self.feed(GenerationRefused(effect.response_id, overloaded=False))
            return
        self._generation = generation
        self.feed(GenerationStarted(effect.response_id, generation.input_tokens))

    def abort_generation(self) -> None:
        """Abort the running generation (no more tokens) and forget it."""
        generation, self._generation = self._generation, None
        if generation is not None:
            generation.abort()

    def engine_output(self, response_id: str, chunk: OutputChunk) -> None:
        """Engine output of a running response (pushed from the engine, no task hop)."""
        self.telemetry.output(response_id)
        try:
            now = monotonic()  # one clock read per token, shared by the meter and the core
            self.meter.chunk(now)
            # Once per token: the core's allocation-free entry for EngineOutput.
            effects = self.core.output(response_id, chunk, now, self._generation)
            if effects is WAKE_ALONE:
                # Most tokens only wake the writer: no walk through the effect table.
                transport = self.transport
                if transport is not None:
                    transport.wake()
            else:
                self.execute(effects)
        except Exception:
            self._failed(response_id, "output")

    def engine_finished(self, response_id: str, reason: FinishReason) -> None:
        """The engine stopped by itself (its counts go with the finish)."""
        generation = self._generation
        try:
            self.feed(EngineFinished(response_id, reason))
        except Exception:
            self._failed(response_id, "finish")
        finally:
            if self._generation is generation:
                self._generation = None  # finished: nothing left to abort

    def _failed(self, response_id: str, stage: str) -> None:
        """Handling an input raised: the response still ends, once, ``failed``."""
        log.exception("%s of %s/%s failed; the response fails", stage, self.session_id, response_id)
        try:
            self.feed(InternalFailure(response_id))
        except Exception:
            log.exception("ending %s/%s failed", self.session_id, response_id)

    # -- usage -----------------------------------------------------------------

    def settle(self, *, include_unsent: bool = False) -> None:
        """Write the usage of finished responses to the store's ledger."""
        start = len(self.journal.usage)
        if self.journal.settle(include_unsent=include_unsent, ended=self.telemetry.response_ended):
            self.persist()
        self.context.metrics.responses_ended(self.journal.usage, start)
        if not include_unsent:  # the writer's call, right after a response.done left
            self.meter.done_sent()
