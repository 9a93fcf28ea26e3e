"""The state changes of a response's tool rounds (the decisions are in ``tool_policy``).

A round's calls stream as provisional deltas, are validated when complete and
announced, join the history with the round's text when the engine stops for
them, and take results; when every result is in, the next round starts after
them.
"""

from __future__ import annotations

from typing import Any

from protocol.conversation import Turn
from protocol.session.history import record_round
from protocol.session.lifecycle import Phase, Trigger
from protocol.session.parts import SessionParts
from protocol.session.responses import ResponseState
from protocol.tool_loop import CallState, ToolCallState, result_text


def record_fragment(
    session: SessionParts,
    response: ResponseState,
    call_id: str,
    name: str,
    text: str,
    tokens: int,
) -> None:
    """A piece of a call's arguments: a provisional delta (nothing once it ended)."""
    response.generated_tokens += tokens
    session.usage.output_tokens_generated += tokens
    if not response.done:
        event = session.tools.fragment(response.id, response.generations, call_id, name, text)
        event.tokens = tokens
        session.outbox.push(event)


def emit_call(session: SessionParts, response: ResponseState, call_id: str) -> ToolCallState:
    """The call's arguments are complete: validate (against the response's tools) and announce.

    Raises :class:`protocol.tool_loop.ToolArgumentsInvalid`.
    """
    event = session.tools.complete(call_id, response.tool_validators)
    session.outbox.push(event)
    return session.tools.calls[call_id]


def await_tools(session: SessionParts, response: ResponseState) -> list[ToolCallState]:
    """The engine stopped for its calls: the round's text and calls join the history.

    Returns the calls still waiting for a result.
    """
    calls = session.tools.emitted(response.id, response.generations)
    record_round(session, response, response.generated_text()[response.segment_start :])
    # That text is in the history now; an end while waiting must not add it again.
    response.segment_start = response.generated_chars
    response.advance(Trigger.TOOL_CALLS)
    return [c for c in calls if c.state is CallState.EMITTED]


def reject_call(session: SessionParts, response: ResponseState, call_id: str, message: str) -> None:
    """An invalid call and why, in the history, for the engine's next attempt."""
    call = session.tools.calls[call_id]
    text = response.generated_text()[response.segment_start :]
    session.conversation.append(Turn("assistant", text, (call.as_call(),)))
    error = result_text(None, f"invalid_arguments: {message}")
    session.conversation.append(Turn("tool", error, (), call_id))
    response.segment_start = response.generated_chars
    response.advance(Trigger.RETRY)


def add_result(session: SessionParts, call_id: str, output: Any, error: str | None) -> bool:
    """A result the store applied; returns whether its waiting response may go on."""
    call = session.tools.answer(call_id, output, error)
    if call is None:
        return False
    if any(call_id in (c.call_id for c in t.tool_calls) for t in session.conversation.turns):
        session.conversation.append(Turn("tool", result_text(output, error), (), call_id))
    response = session.active
    return (
        response is not None
        and response.id == call.response_id
        and response.phase is Phase.AWAITING_TOOLS
        and not session.tools.pending(response.id)
    )


def next_round(response: ResponseState) -> None:
    """Every result is in: the response generates again, after them."""
    response.advance(Trigger.NEXT_ROUND)
    response.segment_start = response.generated_chars
