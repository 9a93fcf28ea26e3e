"""The tool-call ledger: the store calls the session core asks for, run off the reader.

The core decides (validate, retry, wait, time out: ``protocol.session.tool_policy``);
this module only executes its ledger effects against the session store, one
after another in the order they were asked for (a result is applied after
its call was recorded), in a task, so the connection's reader never waits
for the store. Each outcome comes back to the core as an input.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable

from protocol.session.effects import ApplyToolResult, CloseToolCalls, RecordToolCall
from protocol.session.inputs import (
    Input,
    InternalFailure,
    ResultOutcome,
    ToolCallsClosed,
    ToolResultStored,
)
from wsserver.store.base import (
    SessionStore,
    SessionStoreUnavailable,
    StoredDataUnreadable,
    ToolCallRecord,
    ToolCallStatus,
    ToolResultOutcome,
)

log = logging.getLogger(__name__)

LedgerEffect = RecordToolCall | ApplyToolResult | CloseToolCalls

_OUTCOMES = {
    ToolResultOutcome.APPLIED: ResultOutcome.APPLIED,
    ToolResultOutcome.DUPLICATE: ResultOutcome.DUPLICATE,
    ToolResultOutcome.UNKNOWN: ResultOutcome.UNKNOWN,
    ToolResultOutcome.CLOSED: ResultOutcome.CLOSED,
}


class ToolLedger:
    """Executes one session's ledger effects in order, in the background."""

    __slots__ = ("_report", "_session_id", "_store", "_tail")

    def __init__(
        self, store: SessionStore, session_id: str, report: Callable[[Input], None]
    ) -> None:
        self._store = store
        self._session_id = session_id
        self._report = report
        """Feeds an outcome back to the session core."""
        self._tail: asyncio.Task[None] | None = None
        """The latest store call; the next one starts after it."""

    def run(self, effect: LedgerEffect) -> None:
        """Queue the store call behind the ones asked for before it."""
        previous = self._tail
        task = asyncio.get_running_loop().create_task(self._after(previous, effect))
        self._tail = task

    @property
    def idle(self) -> bool:
        """Whether no store call is queued or running."""
        return self._tail is None or self._tail.done()

    async def _after(self, previous: asyncio.Task[None] | None, effect: LedgerEffect) -> None:
        if previous is not None:
            await asyncio.wait({previous})
        try:
            await self._execute(effect)
        except Exception:
            log.exception("ledger call of %s failed", self._session_id)
            if isinstance(effect, ApplyToolResult):
                # Always an answer: messages sent after the result wait for it.
                self._report(
                    ToolResultStored(
                        effect.call_id,
                        ResultOutcome.FAILED,
                        effect.output,
                        effect.error,
                        effect.request_id,
                    )
                )
            elif isinstance(effect, CloseToolCalls):
                # The response waits for nothing else: it must still end, once.
                self._report(InternalFailure(effect.response_id))

    async def _execute(self, effect: LedgerEffect) -> None:
        if isinstance(effect, RecordToolCall):
            record = ToolCallRecord(
                effect.call_id,
                effect.response_id,
                effect.name,
                effect.arguments,
                created_at=time.time(),
            )
            try:
                await self._store.add_tool_calls(self._session_id, [record])
            except SessionStoreUnavailable:
                log.warning("could not record tool call %s of %s", effect.call_id, self._session_id)
        elif isinstance(effect, ApplyToolResult):
            await self._apply(effect)
        else:
            await self._close(effect)

    async def _apply(self, effect: ApplyToolResult) -> None:
        try:
            outcome, record = await self._store.apply_tool_result(
                self._session_id, effect.call_id, json.dumps(effect.output), effect.error
            )
        except SessionStoreUnavailable:
            result, status = ResultOutcome.UNAVAILABLE, None
        except StoredDataUnreadable as exc:
            log.error("tool result %s of %s: %s", effect.call_id, self._session_id, exc)
            result, status = ResultOutcome.UNREADABLE, None
        else:
            result = _OUTCOMES[outcome]
            status = record.status.value if record is not None else None
        self._report(
            ToolResultStored(
                effect.call_id, result, effect.output, effect.error, effect.request_id, status
            )
        )

    async def _close(self, effect: CloseToolCalls) -> None:
        closed: list[str] = []
        for call_id in effect.call_ids:
            try:
                done = await self._store.close_tool_call(
                    self._session_id, call_id, ToolCallStatus.TIMED_OUT
                )
            except SessionStoreUnavailable:
                done = True  # nobody can apply a result to it here either
            except StoredDataUnreadable as exc:
                log.error("closing tool call %s of %s: %s", call_id, self._session_id, exc)
                done = True  # nor to a call whose ledger does not read back
            if done:
                closed.append(call_id)
        self._report(ToolCallsClosed(effect.response_id, tuple(closed)))
