"""What a response leaves in the conversation, and the conversation's bound.

A response's text joins the history when it ends (what was heard for an
interrupted one), or when its round stops for tool calls (with the calls, so
their results can follow). The history is bounded: the oldest whole
exchanges are forgotten first.
"""

from __future__ import annotations

from protocol.codes import ErrorCode
from protocol.conversation import Turn
from protocol.errors import ProtocolViolation
from protocol.session.lifecycle import Phase
from protocol.session.parts import SessionParts
from protocol.session.responses import CONTINUABLE, ResponseState, ResponseStatus
from protocol.tool_loop import CallState, result_text


def turn_chars(turn: Turn) -> int:
    """Characters of one turn (its text and its calls' names and arguments)."""
    return len(turn.text) + sum(len(c.arguments) + len(c.name) for c in turn.tool_calls)


def history_chars(session: SessionParts) -> int:
    """Characters of the conversation (turn texts and tool-call arguments)."""
    return sum(turn_chars(t) for t in session.conversation.turns)


def record_round(session: SessionParts, response: ResponseState, text: str) -> None:
    """A round's text and the calls the client got become an assistant turn.

    A response awaiting tools has recorded its round already (when the engine
    stopped for the calls): only new text is added then.
    """
    emitted = session.tools.emitted(response.id, response.generations)
    if response.phase is Phase.AWAITING_TOOLS or not emitted:
        if text:
            session.conversation.add("assistant", text)
        return
    session.conversation.append(Turn("assistant", text, tuple(c.as_call() for c in emitted)))
    # Results that came while the engine was still writing later calls.
    for call in emitted:
        if call.state is CallState.ANSWERED:
            answer = result_text(call.output, call.error)
            session.conversation.append(Turn("tool", answer, (), call.call_id))


def record_ending(
    session: SessionParts,
    response: ResponseState,
    status: ResponseStatus,
    rendered_chars: int | None,
) -> None:
    """The turn an ending response leaves: all its text, or what the user heard."""
    if status is ResponseStatus.CANCELLED:
        return
    if status is ResponseStatus.INTERRUPTED:
        text = response.delivered_text()[response.segment_start :]
        if response.played_ms is not None:
            # What the user heard, not what reached the device's buffer.
            text = text[: response.heard_chars(response.played_ms)]
        if rendered_chars is not None:
            response.rendered_chars = rendered_chars
            # A client cannot have rendered more than it was sent: clamp.
            text = text[: max(0, rendered_chars)]
    else:
        text = response.generated_text()[response.segment_start :]
    if response.segment_start == 0:
        text = response.prefix + text
    if response.phase is not Phase.AWAITING_TOOLS and session.tools.emitted(
        response.id, response.generations
    ):
        # Calls the client got stay in the history, so their results can follow.
        record_round(session, response, text)
        return
    if text:
        response.history_index = len(session.conversation.turns)
        session.conversation.add("assistant", text)
        response.history_text = text


def cut_to_heard(session: SessionParts, response: ResponseState) -> None:
    """Cut an interrupted answer's turn again to what the client says it played.

    Only while that turn is still the latest thing it said and no other answer
    runs (a running answer was built on the turn as it is).
    """
    index = response.history_index
    if (
        response.status is not ResponseStatus.INTERRUPTED
        or not response.has_audio
        or index is None
        or response.played_ms is None
        or session.active is not None
    ):
        return
    turns = session.conversation.turns
    if index < len(turns) and turns[index].text == response.history_text:
        heard = response.delivered_text()[: response.heard_chars(response.played_ms)]
        if response.rendered_chars is not None:
            heard = heard[: response.rendered_chars]
        text = response.prefix + heard
        session.conversation.replace(index, Turn("assistant", text))
        response.history_text = text


def trim_history(session: SessionParts) -> None:
    """Forget the oldest turns while the history is above its bound.

    Whole exchanges go: the history then starts at a user turn (never with
    an answer or a tool result whose call was forgotten). The newest turn
    always stays: it is what the next response answers.
    """
    turns = session.conversation.turns
    excess = history_chars(session) - session.limits.history_max_chars
    if excess <= 0:
        return
    drop = 0
    while drop < len(turns) - 1 and (excess > 0 or turns[drop].role != "user"):
        excess -= turn_chars(turns[drop])
        drop += 1
    if not drop:
        return
    del turns[:drop]
    session.conversation.version += 1
    for response in (session.last_response, session.active):
        if response is not None and response.history_index is not None:
            index = response.history_index - drop
            response.history_index = index if index >= 0 else None


def take_continued_turn(session: SessionParts, response_id: str) -> str:
    """Check that ``response_id`` may be continued; returns the text it continues from.

    Allowed for the latest response when it ended failed, incomplete or
    interrupted and nothing was said after it. Its partial turn leaves the
    history: it becomes the prefix the engine continues from.
    """
    last = session.last_response
    if last is None or last.id != response_id:
        raise ProtocolViolation(
            ErrorCode.CANNOT_CONTINUE, f"{response_id} is not the latest response"
        )
    if last.status not in CONTINUABLE:
        status = last.status.value if last.status else "running"
        raise ProtocolViolation(
            ErrorCode.CANNOT_CONTINUE, f"{response_id} ended {status}; nothing to continue"
        )
    turns = session.conversation.turns
    if last.history_text:
        if not turns or turns[-1].role != "assistant" or turns[-1].text != last.history_text:
            raise ProtocolViolation(
                ErrorCode.CANNOT_CONTINUE, "the conversation moved on after that response"
            )
        session.conversation.pop()
    elif not session.conversation.awaiting_answer:
        raise ProtocolViolation(
            ErrorCode.CANNOT_CONTINUE, "the conversation moved on after that response"
        )
    return last.history_text or ""
