"""The runtime side of the tool loop: the ledger, results, timeouts, next rounds.

A response that calls tools stops generating when the engine finishes with
``tool_calls``, waits for every result, and generates again with the results
in the history; it ends with one ``response.done`` like any other. Results are
applied through the session store's ledger, atomically, so a result sent
twice, or to another worker after a failover, is applied once.

Invalid arguments never reach the client as a call: the response fails
(``invalid_tool_arguments``), or, with ``--tool-retries``, the engine is told
why and writes the call again (``response.tool_call.rejected`` first).

Interrupt or cancel: calls whose arguments were still streaming are dropped
(listed in ``response.done``); calls already emitted stay pending, and their
results are still recorded (ledger and history) when they come.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.events import TOOL_CALL_CLOSED, TOOL_CALL_REJECTED, TOOL_RESULT_ACCEPTED
from protocol.messages import ToolResult
from protocol.server_session import ResponseState, ResponseStatus
from protocol.tool_loop import CallState, ToolArgumentsInvalid, ToolCallState
from wsserver.engine.base import ToolCallFragment
from wsserver.store.base import (
    SessionStoreUnavailable,
    ToolCallRecord,
    ToolCallStatus,
    ToolResultOutcome,
)

if TYPE_CHECKING:
    from wsserver.session.runtime import SessionRuntime

log = logging.getLogger(__name__)


class ToolRunner:
    """Tool calls of one session on this worker."""

    __slots__ = ("_ledger_writes", "_runtime", "_timer", "retries", "timeout")

    def __init__(self, runtime: SessionRuntime, timeout: float, retries: int = 0) -> None:
        self._runtime = runtime
        self.timeout = timeout
        self.retries = retries
        """Times the engine is asked again for a call whose arguments were invalid."""
        self._ledger_writes: dict[str, asyncio.Task[None]] = {}
        """Call id → its pending ledger write (a result waits for it)."""
        self._timer: asyncio.TimerHandle | None = None

    # -- engine output ---------------------------------------------------

    def on_fragment(self, response: ResponseState, fragment: ToolCallFragment, tokens: int) -> None:
        """A piece of a call, or its end: provisional delta, or the validated call."""
        session = self._runtime.session
        if response.done:
            return
        if not fragment.complete:
            session.record_tool_fragment(
                response, fragment.call_id, fragment.name, fragment.arguments, tokens
            )
            return
        try:
            call = session.emit_tool_call(response, fragment.call_id)
        except ToolArgumentsInvalid as invalid:
            self._invalid(response, invalid)
            return
        self._record(call)

    def _invalid(self, response: ResponseState, invalid: ToolArgumentsInvalid) -> None:
        """Never a half-valid call: ask the engine again (if allowed), else fail."""
        error = {"call_id": invalid.call_id, "name": invalid.name, "message": invalid.message}
        runtime = self._runtime
        if response.tool_retries >= self.retries:
            runtime.fail_response(response, "invalid_tool_arguments", error=error)
            return
        response.tool_retries += 1
        session = runtime.session
        session.push_event(
            TOOL_CALL_REJECTED,
            {"response_id": response.id, **error, "retry": response.tool_retries},
        )
        # The engine sees its call and why it was refused, and writes it again.
        session.reject_tool_call(response, invalid.call_id, invalid.message)
        runtime.restart_round(response)

    def _record(self, call: ToolCallState) -> None:
        record = ToolCallRecord(
            call.call_id,
            call.response_id,
            call.name,
            call.arguments_text,
            created_at=time.time(),
        )
        store = self._runtime.context.store
        session_id = self._runtime.session_id

        async def write() -> None:
            try:
                await store.add_tool_calls(session_id, [record])
            except SessionStoreUnavailable:
                log.warning("could not record tool call %s of %s", call.call_id, session_id)

        self._ledger_writes[call.call_id] = asyncio.get_running_loop().create_task(write())

    def on_tool_calls(self, response: ResponseState) -> None:
        """The engine stopped for its calls: wait for the results (bounded)."""
        pending = self._runtime.session.await_tools(response)
        if not pending:
            self._next_round(response)
            return
        self._cancel_timer()
        self._timer = asyncio.get_running_loop().call_later(
            self.timeout, lambda: self._spawn(self._time_out(response))
        )

    # -- results ---------------------------------------------------------

    async def on_result(self, message: ToolResult) -> None:
        """``tool.result``: applied once through the ledger, acknowledged every time."""
        runtime = self._runtime
        session = runtime.session
        write = self._ledger_writes.pop(message.call_id, None)
        if write is not None:
            await write
        output_text = json.dumps(message.output)
        try:
            outcome, record = await runtime.context.store.apply_tool_result(
                runtime.session_id, message.call_id, output_text, message.error
            )
        except SessionStoreUnavailable:
            raise ProtocolViolation(
                ErrorCode.STORE_UNAVAILABLE, "session store unavailable: resend the result later"
            ) from None
        if outcome is ToolResultOutcome.UNKNOWN:
            raise ProtocolViolation(
                ErrorCode.UNKNOWN_TOOL_CALL, f"no tool call {message.call_id} in this session"
            )
        if outcome is ToolResultOutcome.CLOSED:
            status = record.status.value if record is not None else "closed"
            raise ProtocolViolation(
                ErrorCode.TOOL_CALL_CLOSED,
                f"tool call {message.call_id} is {status}; the result was not applied",
            )
        duplicate = outcome is ToolResultOutcome.DUPLICATE
        session.push_event(
            TOOL_RESULT_ACCEPTED, {"call_id": message.call_id, "duplicate": duplicate}
        )
        if not duplicate and session.add_tool_result(
            message.call_id, message.output, message.error
        ):
            active = session.active
            assert active is not None
            self._next_round(active)

    def _next_round(self, response: ResponseState) -> None:
        self._cancel_timer()
        self._runtime.session.next_round(response)
        self._runtime.generate(response)

    # -- timeouts and endings ----------------------------------------------

    async def _time_out(self, response: ResponseState) -> None:
        self._timer = None
        try:
            await self._close_unanswered(response)
        except Exception:
            # The response waits for nothing else: it must still end, once.
            log.exception("tool timeout of %s failed", response.id)
            if not response.done:
                self._runtime.end_waiting(response, ResponseStatus.FAILED, "internal_error")

    async def _close_unanswered(self, response: ResponseState) -> None:
        runtime = self._runtime
        session = runtime.session
        if response.done or not response.waiting_for_tools:
            return
        for call in session.tools.pending(response.id):
            try:
                closed = await runtime.context.store.close_tool_call(
                    runtime.session_id, call.call_id, ToolCallStatus.TIMED_OUT
                )
            except SessionStoreUnavailable:
                closed = True  # nobody can apply a result to it here either
            if closed and call.state is CallState.EMITTED:
                call.state = CallState.TIMED_OUT
                session.push_event(
                    TOOL_CALL_CLOSED,
                    {"response_id": response.id, "call_id": call.call_id, "status": "timed_out"},
                )
        if not response.done and response.waiting_for_tools:
            if session.tools.pending(response.id):
                return  # a result won the race: it continues the response
            runtime.end_waiting(response, ResponseStatus.INCOMPLETE, "tool_timeout")

    def response_ended(self) -> None:
        """The waiting response ended another way (interrupt, cancel, session end)."""
        self._cancel_timer()

    def pending_announcements(self) -> list[dict[str, Any]]:
        """Emitted calls without a result, for ``session.ready`` after a resume."""
        return [c.announcement() for c in self._runtime.session.tools.pending()]

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
