"""The session runtime: drives a sans-I/O :class:`ServerSession` with real tasks.

It owns the engine generation of the running response, the grace timer of a
detached session and its expiry timer, and the session's journal of writes to
the store. A connection attaches to it; the runtime outlives connections.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from protocol.codes import CloseCode, ErrorCode
from protocol.errors import ProtocolViolation
from protocol.events import OUTPUT_JSON_DONE, RESPONSE_DONE, SESSION_UPDATED, Event
from protocol.json_schema import CompiledSchema, compile_schema
from protocol.messages import (
    Ack,
    AudioSettings,
    ClientMessage,
    InputAudioClear,
    InputAudioCommit,
    InputText,
    OutputAudioPlayed,
    ResponseCancel,
    ResponseContinue,
    ResponseCreate,
    ResponseInterrupt,
    SessionUpdate,
    ToolResult,
)
from protocol.partial_json import PartialJson, PartialJsonError
from protocol.server_session import ResponseState, ResponseStatus, ServerSession
from protocol.snapshot import conversation_snapshot, stream_snapshot
from wsserver.audio.input import AudioInputLimits
from wsserver.engine.base import (
    Engine,
    EngineOverloaded,
    FinishReason,
    Generation,
    GenerationRequest,
    OutputChunk,
)
from wsserver.frontdoor.principal import ANONYMOUS_ID
from wsserver.session.persistence import Persister, SessionJournal
from wsserver.session.tool_calls import ToolRunner
from wsserver.session.voice import VoiceChannel, make_detector
from wsserver.store.base import (
    ResponseUsage,
    SessionRecord,
    SessionStore,
    SessionStoreUnavailable,
)

if TYPE_CHECKING:
    from wsserver.transport.websocket import Connection

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
    FinishReason.TOOL_CALLS: (ResponseStatus.COMPLETED, None),
}


_DEFAULT_AUDIO_LIMITS = AudioInputLimits()


class _ResponseSink:
    """Routes one generation's output to its response."""

    __slots__ = ("_response", "_runtime")

    def __init__(self, runtime: SessionRuntime, response: ResponseState) -> None:
        self._runtime = runtime
        self._response = response

    def on_output(self, chunk: OutputChunk) -> None:
        self._runtime.on_output(self._response, chunk)

    def on_finish(self, reason: FinishReason) -> None:
        self._runtime.on_finish(self._response, reason)


class RuntimeHost(Protocol):
    """What a runtime needs from its worker."""

    def session_ended(self, runtime: SessionRuntime, *, remove_from_store: bool) -> None:
        """Forget the runtime (and, for an ended session, its store record)."""
        ...


@dataclass(frozen=True, slots=True)
class RuntimeContext:
    """Collaborators and timings shared by every runtime of a worker."""

    engine: Engine
    store: SessionStore
    persister: Persister
    host: RuntimeHost
    worker_id: str
    grace_period: float
    resume_window: float
    vad: str = "energy"
    """Voice-activity detector for sessions with server VAD: ``energy`` or ``silero``."""
    audio_limits: AudioInputLimits = _DEFAULT_AUDIO_LIMITS
    tool_timeout: float = 60.0
    """Seconds an emitted tool call waits for its result."""
    tool_retries: int = 0
    """Times the engine writes a call again after invalid arguments (0: the response fails)."""


class SessionRuntime:
    """One live session on this worker."""

    __slots__ = (
        "_expiry_timer",
        "_generation",
        "_grace_timer",
        "_output_schema",
        "_recreate_task",
        "_recreating",
        "closed",
        "connection",
        "context",
        "engine",
        "journal",
        "lost_after_seq",
        "principal",
        "session",
        "token_hash",
        "tools",
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
        self.session = session
        self.principal = principal
        self.context = context
        self.engine = context.engine
        self.token_hash = token_hash
        shared = context.store.shared
        self.journal = SessionJournal(session, epoch, context.worker_id, log_events=shared)
        # A store only this process reads needs no copy of every event: the replay
        # buffer here is the log. It still gets the conversation, state and usage.
        session.keep_unpersisted = shared
        self.connection: Connection | None = None
        self._generation: Generation | None = None
        self._output_schema: CompiledSchema | None = None
        """The running response's ``response_format``, compiled once."""
        self._grace_timer: asyncio.TimerHandle | None = None
        self._expiry_timer: asyncio.TimerHandle | None = None
        self._recreating = False
        self._recreate_task: asyncio.Task[None] | None = None
        self.closed = False
        timeout_ms = session.limits.tool_timeout_ms
        self.lost_after_seq: int | None = None
        """Set by a takeover whose client had seen unstored events (told once, at ready)."""
        self.tools = ToolRunner(
            self,
            timeout_ms / 1000 if timeout_ms else context.tool_timeout,
            context.tool_retries,
        )
        self.voice: VoiceChannel | None = None
        if session.audio is not None:
            audio = AudioSettings.model_validate(session.audio)
            detector = make_detector(context.vad, audio)
            self.voice = VoiceChannel(self, audio, detector, context.audio_limits)

    @property
    def epoch(self) -> int:
        """The fencing epoch this worker holds for the session."""
        return self.journal.epoch

    def persist(self) -> None:
        """Schedule the session's new events and state for the store."""
        self.context.persister.mark(self)

    def events_numbered(self) -> None:
        """The writer numbered events: they go to a shared store's log."""
        if self.journal.log_events:
            self.context.persister.mark(self)

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
        loop = asyncio.get_running_loop()
        if departure is Departure.DROPPED:
            if active is not None:
                self._grace_timer = loop.call_later(self.context.grace_period, self._grace_expired)
        elif active is not None:
            self._stop(active, ResponseStatus.CANCELLED, reason=reason)
        if departure is Departure.ENDED:
            self.end(remove_from_store=True)
        else:
            self._expiry_timer = loop.call_later(self.context.resume_window, self.expire)
        # Whatever was numbered for the departed client goes to the store now.
        self.persist()

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
        self.persist()

    async def tool_result(self, message: ToolResult) -> None:
        """``tool.result`` (it waits for the store); a refusal becomes an in-band error."""
        try:
            await self.tools.on_result(message)
        except ProtocolViolation as violation:
            if violation.request_id is None:
                violation.request_id = message.id
            self.session.queue_error(violation)
        self.wake()
        self.persist()

    def audio_frame(self, frame: bytes) -> None:
        """A binary audio frame; a refused one becomes an in-band error."""
        outbox = self.session.outbox
        queued = len(outbox)
        try:
            self._voice().on_frame(frame)
        except ProtocolViolation as violation:
            self.session.queue_error(violation)
        # Most chunks change nothing the client or the store sees (50 a second each).
        if len(outbox) != queued:
            self.wake()
            self.persist()

    def _voice(self) -> VoiceChannel:
        if self.voice is None:
            raise ProtocolViolation(
                ErrorCode.AUDIO_NOT_ENABLED, "this session was started without audio"
            )
        return self.voice

    def _dispatch(self, message: ClientMessage) -> None:
        session = self.session
        if isinstance(message, InputText):
            session.add_user_text(message.text)
        elif isinstance(message, ResponseCreate):
            session.check_new_request(message.id)
            session.check_idle()
            schema = message.response_format.schema_ if message.response_format else None
            compiled = (
                compile_schema(schema, "response_format.schema") if schema is not None else None
            )
            if message.input is not None:
                session.add_user_text(message.input)
            response = session.begin_response(message.max_output_tokens, message.id)
            self._output_schema = compiled
            if compiled is not None:
                response.output_schema = compiled.schema
                response.output_json = PartialJson(unicode_only=True)
            self._start(response)
        elif isinstance(message, ResponseContinue):
            session.check_new_request(message.id)
            self._start(
                session.continue_response(
                    message.response_id, message.max_output_tokens, message.id
                )
            )
        elif isinstance(message, ResponseInterrupt):
            response = session.check_active(message.response_id)
            self._stop(
                response,
                ResponseStatus.INTERRUPTED,
                reason="client",
                rendered_chars=message.rendered_chars,
                played_ms=message.played_ms,
            )
        elif isinstance(message, ResponseCancel):
            response = session.check_active(message.response_id)
            self._stop(response, ResponseStatus.CANCELLED, reason="client")
        elif isinstance(message, OutputAudioPlayed):
            self._voice()
            session.report_played(message.response_id, message.played_ms)
        elif isinstance(message, InputAudioCommit):
            self._voice().commit()
        elif isinstance(message, InputAudioClear):
            self._voice().clear()
        elif isinstance(message, SessionUpdate):
            session.tools.set_tools([t.model_dump() for t in message.tools])
            session.conversation.version += 1  # the tools are part of the snapshot
            session.push_event(SESSION_UPDATED, {"tools": [t.name for t in message.tools]})
        elif isinstance(message, Ack):
            session.ack(message.seq)

    # -- actions of the voice channel ---------------------------------------

    def interrupt(self, response: ResponseState, *, reason: str) -> None:
        """Barge-in: the same path as a client's ``response.interrupt``."""
        self._stop(response, ResponseStatus.INTERRUPTED, reason=reason)

    def start_response(self) -> None:
        """Answer the conversation's latest user turn."""
        self._start(self.session.begin_response())

    def continue_response(self, response_id: str) -> None:
        """Continue an interrupted answer from what the user heard."""
        self._start(self.session.continue_response(response_id))

    # -- generation ------------------------------------------------------

    def _start(self, response: ResponseState) -> None:
        self.generate(response)

    def generate(self, response: ResponseState) -> None:
        """Submit the response's next engine request (the first, or after tool results)."""
        voice = self.voice
        response.generations += 1
        suffix = "" if response.generations == 1 else f"/{response.generations}"
        request = GenerationRequest(
            request_id=f"{self.session_id}/{response.id}{suffix}",
            prompt=self.session.history(),
            max_output_tokens=max(1, response.max_output_tokens - response.generated_tokens),
            prefix=response.prefix if response.generations == 1 else "",
            input_audio=voice.take_audio() if voice is not None else b"",
            sample_rate=voice.settings.sample_rate if voice is not None else 16000,
            audio_output=voice is not None and voice.settings.output,
            tools=tuple(self.session.tools.tools.values()),
            response_format=response.output_schema,
        )
        try:
            generation = self.engine.submit(request, _ResponseSink(self, response))
        except EngineOverloaded:
            self.session.end_response(response, ResponseStatus.FAILED, reason="engine_overloaded")
            return
        except Exception:
            # Never leave a response open that nothing will finish.
            log.exception("engine refused %s", request.request_id)
            self.session.end_response(response, ResponseStatus.FAILED, reason="engine_error")
            return
        self._generation = generation
        # Known now, so a response lost with this worker still reports its input.
        self.session.usage.input_tokens += generation.input_tokens
        response.input_tokens += generation.input_tokens

    def on_output(self, response: ResponseState, chunk: OutputChunk) -> None:
        """Engine output of a running response (pushed from the engine, no task hop)."""
        try:
            self._on_output(response, chunk)
        except Exception:
            self._failed_while_running(response, "output")

    def on_finish(self, response: ResponseState, reason: FinishReason) -> None:
        """The engine stopped by itself."""
        try:
            self._on_finish(response, reason)
        except Exception:
            self._failed_while_running(response, "finish")

    def _failed_while_running(self, response: ResponseState, stage: str) -> None:
        """Whatever failed while a response ran or ended, it still ends, once: ``failed``.

        Without this the engine's loop would log and drop the generation, and the
        response would stay open: no ``response.done``, every later
        ``response.create`` refused as ``response_in_progress``.
        """
        log.exception("%s of %s/%s failed; the response fails", stage, self.session_id, response.id)
        if not response.done:
            try:
                self._stop(response, ResponseStatus.FAILED, reason="internal_error")
            except Exception:
                log.exception("ending %s/%s failed", self.session_id, response.id)
        session = self.session
        if session.active is response:
            # Ending it raised before its done was queued: queue a minimal one.
            session.active = None
            session.last_response = response
            fields = {"response_id": response.id, "status": "failed", "reason": "internal_error"}
            session.outbox.push(Event(RESPONSE_DONE, fields, response_id=response.id))
            self._generation = None
        self.wake()
        self.persist()

    def _on_output(self, response: ResponseState, chunk: OutputChunk) -> None:
        session = self.session
        if chunk.tool_call is not None:
            self.tools.on_fragment(response, chunk.tool_call, chunk.tokens)
        else:
            session.record_output(response, chunk.text, chunk.tokens, chunk.audio, chunk.audio_ms)
        if self.connection is None and self.journal.log_events:
            # Nobody is reading: number it for the shared log now, so a resume on
            # another worker replays it, and a takeover fences this worker at once.
            session.flush()
            self.persist()
        elif session.outbox.nbytes > session.limits.outbox_max_bytes:
            self._outbox_full()
        self.wake()

    def _on_finish(self, response: ResponseState, reason: FinishReason) -> None:
        if response.done:
            return
        if reason is FinishReason.TOOL_CALLS:
            self._generation = None
            self.tools.on_tool_calls(response)
            self.wake()
            return
        if response.output_schema is not None and reason is FinishReason.STOP:
            problem = self._final_output(response)
            if problem is not None:
                self.fail_response(response, "invalid_output", error={"message": problem})
                return
        status, why = _FINISH_STATUS[reason]
        self._end(response, status, reason=why)

    def _final_output(self, response: ResponseState) -> str | None:
        """Validate a structured answer; queue its final value, or say what is wrong."""
        parser = response.output_json
        if parser is None:
            return "the output is not valid json"
        try:
            value = parser.finish()
        except PartialJsonError as exc:
            return f"the output is not valid json: {exc}"
        compiled = self._output_schema
        if compiled is None or compiled.schema is not response.output_schema:
            assert response.output_schema is not None
            compiled = compile_schema(response.output_schema, "response_format.schema")
        problem = compiled.problem(value)
        if problem is not None:
            return f"the output does not match the schema: {problem}"
        self.session.push_event(OUTPUT_JSON_DONE, {"response_id": response.id, "value": value})
        return None

    def fail_response(self, response: ResponseState, reason: str, *, error: dict[str, Any]) -> None:
        """End a response ``failed`` (engine aborted first), saying why in its done."""
        self._stop(response, ResponseStatus.FAILED, reason=reason)
        self.session.annotate_done(response, error=error)

    def restart_round(self, response: ResponseState) -> None:
        """Abort the running engine request and make a new one from the history."""
        generation = self._generation
        if generation is not None:
            generation.abort()
            self._generation = None
        self.generate(response)

    def end_waiting(self, response: ResponseState, status: ResponseStatus, reason: str) -> None:
        """End a response that waits for tool results (no engine request runs)."""
        self._end(response, status, reason=reason)

    def _stop(
        self,
        response: ResponseState,
        status: ResponseStatus,
        *,
        reason: str,
        rendered_chars: int | None = None,
        played_ms: int | None = None,
    ) -> None:
        """Abort the engine first (no more tokens), then end the response."""
        generation = self._generation
        if generation is not None:
            generation.abort()
        self._end(
            response, status, reason=reason, rendered_chars=rendered_chars, played_ms=played_ms
        )

    def _end(
        self,
        response: ResponseState,
        status: ResponseStatus,
        *,
        reason: str | None,
        rendered_chars: int | None = None,
        played_ms: int | None = None,
    ) -> None:
        generation = self._generation if self.session.active is response else None
        self.session.end_response(
            response,
            status,
            reason=reason,
            # A tool loop's later rounds count on top of the earlier ones (done in generate).
            input_tokens=(
                generation.input_tokens
                if generation is not None and response.generations <= 1
                else None
            ),
            generated_tokens=generation.generated_tokens if generation is not None else None,
            rendered_chars=rendered_chars,
            played_ms=played_ms,
        )
        if generation is not None:
            self._generation = None
        self.tools.response_ended()
        if self.voice is not None and not self.closed and self.connection is not None:
            self.voice.response_ended()
        self.wake()

    def _outbox_full(self) -> None:
        connection = self.connection
        if connection is not None:
            connection.close_slow_consumer()
        else:
            # Nobody is reading: number the backlog into the bounded replay buffer.
            self.session.flush()
            self.persist()

    def stop_running(self, reason: str) -> None:
        """End the running response ``incomplete`` (a drain ran out of time)."""
        active = self.session.active
        if active is not None:
            self._stop(active, ResponseStatus.INCOMPLETE, reason=reason)
            self.persist()

    def end_lost_response(self, response: ResponseState, reason: str) -> None:
        """End a response whose worker is gone, with the usage the store had."""
        self.session.end_response(response, ResponseStatus.FAILED, reason=reason)
        # The store's text is all that survived; a client that saw more trims to it.
        self.session.annotate_done(response, persisted_chars=response.generated_chars)
        self.persist()

    # -- timers ----------------------------------------------------------

    def _grace_expired(self) -> None:
        self._grace_timer = None
        active = self.session.active
        if self.connection is None and active is not None:
            self._stop(active, ResponseStatus.INCOMPLETE, reason="client_gone")
            # Nobody may come back for the response.done: record usage now.
            self.settle(include_unsent=True)

    def expire(self) -> None:
        """The resume window passed: stop, record usage, drop the local runtime.

        The store keeps the record (and its snapshot) until its own TTL.
        """
        self.end(remove_from_store=False)

    def end(self, *, remove_from_store: bool) -> None:
        """Stop generating, record usage, persist the last events, forget the session."""
        if self.closed:
            return
        self.closed = True
        self._cancel_timers()
        active = self.session.active
        if active is not None:
            self._stop(active, ResponseStatus.INCOMPLETE, reason="session_expired")
        self.session.flush()
        self.settle(include_unsent=True)
        self.journal.final = True
        self.persist()
        self.context.host.session_ended(self, remove_from_store=remove_from_store)

    def record_lost(self) -> None:
        """The store lost the session (expired idle, or Redis restarted empty): write it again."""
        if self.closed or self._recreating:
            return
        self._recreating = True
        self._recreate_task = asyncio.create_task(self._recreate())

    async def _recreate(self) -> None:
        session = self.session
        record = SessionRecord(
            self.session_id,
            self.token_hash,
            time.time(),
            epoch=self.epoch,
            owner=self.context.worker_id,
            conversation=conversation_snapshot(session).to_dict(),
            stream=stream_snapshot(session).to_dict(),
            principal=self.principal,
        )
        try:
            await self.context.store.create(record)
        except SessionStoreUnavailable:
            log.warning("could not re-create %s in the store", self.session_id)
        else:
            # Everything still buffered goes back in, so a resume elsewhere can use it.
            self.journal.pending = list(session.replay.after(session.replay.first_seq - 1))
            self.journal.conversation_version = session.conversation.version
        finally:
            self._recreating = False
            self.persist()

    def moved(self) -> None:
        """Another worker took the session over: stop at once, say nothing more."""
        if self.closed:
            return
        self.closed = True
        self._cancel_timers()
        generation = self._generation
        if generation is not None:
            # The new owner ends this response; generating on would be for nobody.
            generation.abort()
        connection, self.connection = self.connection, None
        if connection is not None:
            connection.runtime = None
            connection.close(CloseCode.SESSION_MOVED, "session moved to another worker")
        self.context.host.session_ended(self, remove_from_store=False)

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
            self.journal.usage.append(
                ResponseUsage(
                    response.id,
                    response.status.value if response.status else "unknown",
                    response.reason,
                    response.usage(),
                )
            )
        if responses:
            self.persist()
