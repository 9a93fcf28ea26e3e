"""The session core: every decision of one session, as inputs in and effects out.

:meth:`SessionCore.handle` takes one input (a client message, an engine chunk
or finish, a timer firing, a store answer, a voice event, the transport
leaving) with ``now`` and the running generation's own counts, changes the
session's state and returns the effects for the runtime to execute, in order.
One table (:data:`HANDLERS`) maps every input type to its handler. The core
does no I/O and never reads a clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.events import SESSION_UPDATED
from protocol.generation import OutputChunk, ToolCallFragment
from protocol.json_schema import CompiledSchema, compile_schema
from protocol.messages import (
    Ack,
    AudioSettings,
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
from protocol.partial_json import PartialJson
from protocol.session import (
    responding,
    session_policy,
    session_update,
    tool_policy,
    turn_taking,
)
from protocol.session.core_settings import CoreSettings
from protocol.session.effects import (
    PERSIST,
    WAKE,
    Effect,
    RecordUsage,
)
from protocol.session.inputs import (
    EngineFinished,
    EngineOutput,
    GenerationRefused,
    GenerationStarted,
    Input,
    InternalFailure,
    Refused,
    ResponseLost,
    SessionEnding,
    SessionMessage,
    SessionMoved,
    SpeechDiscarded,
    SpeechStarted,
    SpeechStopped,
    StopRunning,
    TimerFired,
    TokenCounts,
    ToolCallsClosed,
    ToolResultStored,
    TransportAttached,
    TransportDeparted,
    TurnCommitted,
)
from protocol.session.responses import ResponseState, ResponseStatus
from protocol.session.result_order import MAX_WAITING, ResultBarrier
from protocol.session.session_update import response_overrides
from protocol.session.state import ServerSession
from protocol.session.turns import TurnTaking

WAKE_ALONE: tuple[Effect] = (WAKE,)
"""The answer to most engine chunks, shared (see :meth:`SessionCore.output`): a
runtime may test for it by identity and wake its writer without the effect table."""


class SessionCore:
    """One session's decisions over its :class:`ServerSession` state."""

    __slots__ = (
        "_effects",
        "attached",
        "barrier",
        "closed",
        "engine",
        "generating",
        "now",
        "output_schema",
        "session",
        "settings",
        "turns",
    )

    def __init__(self, session: ServerSession, settings: CoreSettings) -> None:
        self.session = session
        self.settings = settings
        self.attached = False
        """A transport is attached (its writer numbers events as it sends them)."""
        self.closed = False
        """The session ended or moved here: nothing starts any more."""
        self.generating = False
        """An engine request runs for the active response."""
        self.output_schema: CompiledSchema | None = None
        """The running response's ``response_format``, compiled once."""
        self.turns: TurnTaking | None = None
        if session.audio is not None:
            audio = AudioSettings.model_validate(session.audio)
            self.turns = TurnTaking(audio, settings.max_turn_ms)
        self.now = 0.0
        self.barrier: ResultBarrier | None = None
        """Made at the first ``tool.result``: messages kept in order behind results."""
        self.engine: TokenCounts | None = None
        self._effects: list[Effect] | tuple[Effect] | None = None

    @property
    def tool_timeout(self) -> float:
        """Seconds a round's calls wait for their results."""
        timeout_ms = self.session.limits.tool_timeout_ms
        return timeout_ms / 1000 if timeout_ms else self.settings.tool_timeout

    def handle(self, event: Input, now: float, engine: TokenCounts | None = None) -> list[Effect]:
        """Apply one input; the effects to execute, in order.

        ``engine`` gives the running generation's own counts (``None`` when none
        runs; read only if a response ends now, which then reports them).
        """
        self.now = now
        self.engine = engine
        self._effects = None
        kind = type(event)
        barrier = self.barrier
        if kind is ToolResult and barrier is None:
            barrier = self.barrier = ResultBarrier()
        if barrier is None:
            HANDLERS[kind](self, event)
        else:
            self._in_order(barrier, event)
        if not self.attached and self.settings.log_shared and not self.closed:
            # Nobody is reading, and the log is shared: what this input queued (a
            # response.done, an error, a tool call) goes to the store now, as output
            # does (responding.output). Left in the outbox, it would reach no resume
            # on another worker, while the stored snapshot says the response ended.
            self.number_for_the_log()
        return self._taken()

    def number_for_the_log(self) -> None:
        """Number every queued event now (no transport is attached) and persist them;
        a ``response.done`` among them has its usage recorded now, since no writer
        will send it here and settle it."""
        session = self.session
        if session.number_pending():
            self.emit(PERSIST)
            if session.settled:
                self.emit(RecordUsage(include_unsent=True))

    def _in_order(self, barrier: ResultBarrier, event: Input) -> None:
        """Handle ``event`` unless it must wait behind a result; then what it released."""
        kind = type(event)
        if barrier.must_wait(event):
            if len(barrier.waiting) < MAX_WAITING:
                barrier.waiting.append(event)
                return
            self.refuse(
                ProtocolViolation(
                    ErrorCode.STORE_UNAVAILABLE,
                    "too many messages wait for a tool result to be stored; send it again later",
                    getattr(event, "id", None),
                )
            )
            self.emit(WAKE)
            return
        HANDLERS[kind](self, event)
        if kind is ToolResult:
            barrier.in_flight += 1  # its ApplyToolResult is on the way to the ledger
        elif kind is ToolResultStored:
            barrier.in_flight -= 1
        while (ready := barrier.next_ready()) is not None:
            HANDLERS[type(ready)](self, ready)
            if type(ready) is ToolResult:
                barrier.in_flight += 1

    def output(
        self, response_id: str, chunk: OutputChunk, now: float, engine: TokenCounts | None
    ) -> Sequence[Effect]:
        """``handle(EngineOutput(response_id, chunk), now, engine)`` without the input object.

        The per-token path: the same handler as the table's, but nothing is
        allocated for a token that only wakes the writer (its answer is a shared
        ``(WAKE,)``); every object made per token is garbage-collector work.
        """
        self.now = now
        self.engine = engine
        self._effects = None
        responding.output(self, response_id, chunk)
        effects = self._effects
        return () if effects is None else effects

    def generate(self, response: ResponseState) -> list[Effect]:
        """The effects of the response's next engine request, outside any input."""
        self._effects = None
        responding.start(self, response)
        return self._taken()

    def emit(self, effect: Effect) -> None:
        """Add an effect to the current input's answer."""
        effects = self._effects
        if effects is None:
            # The common answer (a token: wake the writer) shares one tuple.
            self._effects = WAKE_ALONE if effect is WAKE else [effect]
        elif effects is WAKE_ALONE:
            self._effects = [WAKE, effect]
        else:
            assert isinstance(effects, list)
            effects.append(effect)

    def _taken(self) -> list[Effect]:
        """The current input's effects, as a list of their own."""
        effects, self._effects = self._effects, None
        if effects is None:
            return []
        return effects if isinstance(effects, list) else list(effects)

    def response(self, response_id: str) -> ResponseState | None:
        """The running, unsent or latest response of that id."""
        session = self.session
        active = session.active
        if active is not None and active.id == response_id:
            return active  # the common case: once per token
        last = session.last_response
        if last is not None and last.id == response_id:
            return last
        return session.responses.get(response_id)

    def refuse(self, violation: ProtocolViolation) -> None:
        """Queue an in-band ``error`` for a refused message."""
        self.session.queue_error(violation)

    def voice(self) -> TurnTaking:
        """The session's turn taking (``audio_not_enabled`` for a text-only session)."""
        if self.turns is None:
            raise ProtocolViolation(
                ErrorCode.AUDIO_NOT_ENABLED, "this session was started without audio"
            )
        return self.turns

    # -- hooks of the response lifecycle (see protocol.session.actions) ----------

    def tool_fragment(
        self, response: ResponseState, fragment: ToolCallFragment, tokens: int
    ) -> None:
        """The engine wrote a piece of a tool call: the tool policy judges it."""
        tool_policy.on_fragment(self, response, fragment, tokens)

    def tools_called(self, response: ResponseState) -> None:
        """The round stopped for its calls: the tool policy waits for the results."""
        tool_policy.on_tool_calls(self, response)

    def response_ended(self) -> None:
        """A response ended: the tool wait stops; a voice turn that waited is answered."""
        tool_policy.response_ended(self)
        if self.turns is not None and not self.closed and self.attached:
            turn_taking.response_ended(self, self.turns)


# -- client messages ----------------------------------------------------------


def _client(
    handler: Callable[[SessionCore, Any], None],
) -> Callable[[SessionCore, Any], None]:
    """A client message handler: a violation becomes an in-band error; then wake, persist."""

    def handle(core: SessionCore, message: SessionMessage) -> None:
        try:
            handler(core, message)
        except ProtocolViolation as violation:
            if violation.request_id is None:
                violation.request_id = message.id
            core.refuse(violation)
        core.emit(WAKE)
        core.emit(PERSIST)

    return handle


def _input_text(core: SessionCore, message: InputText) -> None:
    core.session.add_user_text(message.text)


def _response_create(core: SessionCore, message: ResponseCreate) -> None:
    session = core.session
    session.check_new_request(message.id)
    session.check_idle()
    schema = message.response_format.schema_ if message.response_format else None
    compiled = compile_schema(schema, "response_format.schema") if schema is not None else None
    overrides = response_overrides(core, message)
    if message.input is not None:
        session.add_user_text(message.input)
    response = session.begin_response(message.max_output_tokens, message.id)
    response.set_overrides(overrides)
    core.output_schema = compiled
    if compiled is not None:
        response.output_schema = compiled.schema
        response.output_json = PartialJson(unicode_only=True)
    responding.start(core, response)


def _response_continue(core: SessionCore, message: ResponseContinue) -> None:
    session = core.session
    session.check_new_request(message.id)
    response = session.continue_response(message.response_id, message.max_output_tokens, message.id)
    responding.start(core, response)


def _response_interrupt(core: SessionCore, message: ResponseInterrupt) -> None:
    response = core.session.check_active(message.response_id)
    responding.stop(
        core,
        response,
        ResponseStatus.INTERRUPTED,
        reason="client",
        rendered_chars=message.rendered_chars,
        played_ms=message.played_ms,
    )


def _response_cancel(core: SessionCore, message: ResponseCancel) -> None:
    response = core.session.check_active(message.response_id)
    responding.stop(core, response, ResponseStatus.CANCELLED, reason="client")


def _audio_played(core: SessionCore, message: OutputAudioPlayed) -> None:
    core.voice()
    core.session.report_played(message.response_id, message.played_ms)


def _audio_commit(core: SessionCore, message: InputAudioCommit) -> None:
    turn_taking.commit(core, core.voice(), message.id)


def _audio_clear(core: SessionCore, message: InputAudioClear) -> None:
    turn_taking.clear(core, core.voice())


def _session_update(core: SessionCore, message: SessionUpdate) -> None:
    session_update.apply(core, message)
    core.session.push_event(SESSION_UPDATED, session_update.in_force(core))


def _ack(core: SessionCore, message: Ack) -> None:
    core.session.ack(message.seq)


def _tool_result(core: SessionCore, message: ToolResult) -> None:
    tool_policy.on_result(core, message)


def _refused(core: SessionCore, event: Refused) -> None:
    core.refuse(event.violation)
    core.emit(WAKE)
    core.emit(PERSIST)


HANDLERS: dict[type, Callable[[SessionCore, Any], None]] = {
    # client messages
    InputText: _client(_input_text),
    ResponseCreate: _client(_response_create),
    ResponseContinue: _client(_response_continue),
    ResponseInterrupt: _client(_response_interrupt),
    ResponseCancel: _client(_response_cancel),
    OutputAudioPlayed: _client(_audio_played),
    InputAudioCommit: _client(_audio_commit),
    InputAudioClear: _client(_audio_clear),
    SessionUpdate: _client(_session_update),
    Ack: _client(_ack),
    ToolResult: _client(_tool_result),
    Refused: _refused,
    # the engine
    GenerationStarted: responding.on_started,
    GenerationRefused: responding.on_refused,
    EngineOutput: responding.on_output,
    EngineFinished: responding.on_finished,
    InternalFailure: responding.on_internal_failure,
    # the store
    ToolResultStored: tool_policy.on_result_stored,
    ToolCallsClosed: tool_policy.on_calls_closed,
    # the turn detector
    SpeechStarted: turn_taking.on_voice_event,
    SpeechStopped: turn_taking.on_voice_event,
    TurnCommitted: turn_taking.on_voice_event,
    SpeechDiscarded: turn_taking.on_voice_event,
    # the transport, timers and the worker
    TransportAttached: session_policy.attached,
    TransportDeparted: session_policy.departed,
    TimerFired: session_policy.timer,
    SessionEnding: session_policy.ending,
    SessionMoved: session_policy.moved,
    StopRunning: session_policy.stop_running,
    ResponseLost: session_policy.lost,
}
"""Every input type and its handler: the one place a session's input is dispatched."""
