"""Numbering: an event leaving the outbox gets its seq and joins the replay buffer.

What reached the client is counted here, as it leaves: delivered text and
tokens, audio time sent, and a ``response.done``'s usage (known only now).
"""

from __future__ import annotations

from typing import Protocol

from protocol.events import RESPONSE_DONE, AudioDelta, Event, TextDelta
from protocol.outbox import Outbox
from protocol.replay import ReplayBuffer
from protocol.session.responses import ResponseState
from protocol.usage import Usage


class NumberedParts(Protocol):
    """What numbering works on (:class:`protocol.session.state.ServerSession` has it)."""

    outbox: Outbox
    replay: ReplayBuffer
    usage: Usage
    responses: dict[str, ResponseState]
    settled: list[ResponseState]
    unpersisted: list[Event]
    keep_unpersisted: bool


def number_next(session: NumberedParts) -> Event | None:
    """Take the session's next event to send, number it and keep it for replay."""
    event = session.outbox.pop()
    if event is None:
        return None
    response = session.responses.get(event.response_id) if event.response_id else None
    if isinstance(event, TextDelta):
        text = event.seal()
        if response is not None:
            response.delivered_chars += len(text)
            response.delivered_tokens += event.tokens
        session.usage.output_tokens_delivered += event.tokens
    elif event.tokens and response is not None:
        # A tool call's argument fragment: its tokens reached the client too.
        response.delivered_tokens += event.tokens
        session.usage.output_tokens_delivered += event.tokens
    elif type(event) is AudioDelta:
        event.seal()
        if response is not None:
            response.audio_sent_ms += event.duration_ms
    elif event.type == RESPONSE_DONE and response is not None:
        # The done was complete when queued; its usage is the one thing known only
        # now (tokens delivered up to this event), so numbering adds it.
        event.fields["usage"] = response.usage().to_dict()
        if response.has_audio:
            event.fields["audio_ms"] = round(response.audio_sent_ms)
        del session.responses[response.id]
        session.settled.append(response)
    replay = session.replay
    event.seq = replay.last_seq + 1
    replay.append(event)
    if session.keep_unpersisted:
        session.unpersisted.append(event)
    return event
