"""The tool-round policy: what happens to a call, a result and a round's wait.

A response that calls tools stops generating when the engine finishes with
``tool_calls``, waits for every result, and generates again with the results
in the history; it ends with one ``response.done`` like any other. In the
session's ``client`` tool-round mode it ends there instead (``tool_calls``),
and the client's next ``response.create`` is the next round. Results
are applied through the session store's ledger (an effect whose outcome
comes back as an input), so a result sent twice, or to another worker after
a failover, is applied once.

Invalid arguments never reach the client as a call: the response fails
(``invalid_tool_arguments``), or, with retries allowed, the engine is told
why and writes the call again (``response.tool_call.rejected`` first).
A round whose results do not all come within the tool timeout closes its
unanswered calls (``timed_out``) and ends ``incomplete`` (``tool_timeout``).

Interrupt or cancel: calls whose arguments were still streaming are dropped
(listed in ``response.done``); calls already emitted stay pending, and their
results are still recorded (ledger and history) when they come.
"""

from __future__ import annotations

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.events import TOOL_CALL_CLOSED, TOOL_CALL_REJECTED, TOOL_RESULT_ACCEPTED
from protocol.generation import ToolCallFragment
from protocol.messages import ToolResult
from protocol.session import responding
from protocol.session.actions import CoreActions
from protocol.session.effects import (
    PERSIST,
    WAKE,
    AbortGeneration,
    ApplyToolResult,
    ArmTimer,
    CancelTimer,
    CloseToolCalls,
    RecordToolCall,
)
from protocol.session.inputs import ResultOutcome, TimerKind, ToolCallsClosed, ToolResultStored
from protocol.session.lifecycle import Phase
from protocol.session.responses import ResponseState, ResponseStatus
from protocol.session.tool_rounds import (
    add_result,
    await_tools,
    emit_call,
    next_round,
    record_fragment,
    reject_call,
)
from protocol.tool_loop import CallState, ToolArgumentsInvalid


def on_fragment(
    core: CoreActions, response: ResponseState, fragment: ToolCallFragment, tokens: int
) -> None:
    """A piece of a call, or its end: a provisional delta, or the validated call."""
    if response.done:
        return
    session = core.session
    if not fragment.complete:
        record_fragment(
            session, response, fragment.call_id, fragment.name, fragment.arguments, tokens
        )
        return
    try:
        call = emit_call(session, response, fragment.call_id)
    except ToolArgumentsInvalid as invalid:
        _invalid(core, response, invalid)
        return
    core.emit(RecordToolCall(call.call_id, call.response_id, call.name, call.arguments_text))


def _invalid(core: CoreActions, response: ResponseState, invalid: ToolArgumentsInvalid) -> None:
    """Never a half-valid call: ask the engine again (if allowed), else fail."""
    error = {"call_id": invalid.call_id, "name": invalid.name, "message": invalid.message}
    if response.tool_retries >= core.settings.tool_retries:
        responding.fail(core, response, "invalid_tool_arguments", error=error)
        return
    response.tool_retries += 1
    session = core.session
    session.push_event(
        TOOL_CALL_REJECTED,
        {"response_id": response.id, **error, "retry": response.tool_retries},
    )
    # The engine sees its call and why it was refused, and writes it again.
    reject_call(session, response, invalid.call_id, invalid.message)
    if core.generating:
        core.emit(AbortGeneration())
    responding.start(core, response)


def on_tool_calls(core: CoreActions, response: ResponseState) -> None:
    """The engine stopped for its calls: wait for the results (bounded), or end here.

    With ``tool_rounds: client`` the response ends at once, ``completed`` with reason
    ``tool_calls`` and the calls it made; they stay open (no timer), their results are
    recorded when they come, and the client's next ``response.create`` answers them.
    """
    session = core.session
    if session.tool_rounds == "client":
        calls = session.tools.emitted(response.id, response.generations)
        await_tools(session, response)
        made = [{"call_id": c.call_id, "name": c.name} for c in calls]
        responding.end(
            core,
            response,
            ResponseStatus.COMPLETED,
            reason="tool_calls",
            details={"tool_calls": made},
        )
        return
    pending = await_tools(session, response)
    if not pending:
        _next_round(core, response)
        return
    core.emit(ArmTimer(TimerKind.TOOL_WAIT, core.tool_timeout))


def _next_round(core: CoreActions, response: ResponseState) -> None:
    core.emit(CancelTimer(TimerKind.TOOL_WAIT))
    next_round(response)
    responding.start(core, response)


def on_result(core: CoreActions, message: ToolResult) -> None:
    """``tool.result``: applied once through the ledger; the store's answer comes back."""
    core.emit(ApplyToolResult(message.call_id, message.output, message.error, message.id))


def on_result_stored(core: CoreActions, event: ToolResultStored) -> None:
    """The ledger's answer to a result: acknowledged every time, applied once."""
    try:
        _result_stored(core, event)
    except ProtocolViolation as violation:
        if violation.request_id is None:
            violation.request_id = event.request_id
        core.refuse(violation)
    core.emit(WAKE)
    core.emit(PERSIST)


def _result_stored(core: CoreActions, event: ToolResultStored) -> None:
    session = core.session
    outcome = event.outcome
    if outcome is ResultOutcome.UNAVAILABLE:
        raise ProtocolViolation(
            ErrorCode.STORE_UNAVAILABLE, "session store unavailable: resend the result later"
        )
    if outcome is ResultOutcome.UNREADABLE:
        raise ProtocolViolation(
            ErrorCode.INTERNAL_ERROR,
            "the stored tool-call ledger is unreadable: the result was not applied",
        )
    if outcome is ResultOutcome.FAILED:
        raise ProtocolViolation(ErrorCode.INTERNAL_ERROR, "could not handle tool.result")
    if outcome is ResultOutcome.UNKNOWN:
        raise ProtocolViolation(
            ErrorCode.UNKNOWN_TOOL_CALL, f"no tool call {event.call_id} in this session"
        )
    if outcome is ResultOutcome.CLOSED:
        status = event.call_status or "closed"
        raise ProtocolViolation(
            ErrorCode.TOOL_CALL_CLOSED,
            f"tool call {event.call_id} is {status}; the result was not applied",
        )
    duplicate = outcome is ResultOutcome.DUPLICATE
    session.push_event(TOOL_RESULT_ACCEPTED, {"call_id": event.call_id, "duplicate": duplicate})
    if not duplicate and add_result(session, event.call_id, event.output, event.error):
        active = session.active
        assert active is not None
        _next_round(core, active)


def on_timeout(core: CoreActions) -> None:
    """The round waited long enough: close its unanswered calls in the ledger."""
    response = core.session.active
    if response is None or response.phase is not Phase.AWAITING_TOOLS:
        return
    pending = tuple(c.call_id for c in core.session.tools.pending(response.id))
    core.emit(CloseToolCalls(response.id, pending))


def on_calls_closed(core: CoreActions, event: ToolCallsClosed) -> None:
    """The ledger closed the calls (or could not be reached): the round ends ``incomplete``.

    A result that won the race keeps its call open: it continues the response.
    """
    session = core.session
    response = core.response(event.response_id)
    if response is None or response.done or response.phase is not Phase.AWAITING_TOOLS:
        return
    for call_id in event.call_ids:
        call = session.tools.calls.get(call_id)
        if call is not None and call.state is CallState.EMITTED:
            call.state = CallState.TIMED_OUT
            session.push_event(
                TOOL_CALL_CLOSED,
                {"response_id": response.id, "call_id": call_id, "status": "timed_out"},
            )
    if not session.tools.pending(response.id):
        responding.end(core, response, ResponseStatus.INCOMPLETE, reason="tool_timeout")
    core.emit(WAKE)
    core.emit(PERSIST)


def response_ended(core: CoreActions) -> None:
    """The waiting response ended another way (interrupt, cancel, session end)."""
    core.emit(CancelTimer(TimerKind.TOOL_WAIT))
