"""Events that their encoding cannot carry, made encodable in place.

An event is numbered and in the replay buffer before it is encoded: left as it
is, every resume (and every store batch) would fail on it again. Voided, it
keeps its ``seq``, so the stream stays gap-free.
"""

from __future__ import annotations

from protocol.codes import ErrorCode
from protocol.events import ERROR, EVENT_OVERHEAD_BYTES, Event, TextDelta, error_fields
from protocol.json_value import LONE_SURROGATE


class EventNotEncodable(Exception):
    """A session event holds a value its encoding cannot carry."""


def void_event(event: Event) -> None:
    """Make an event encodable, in place (it is the replay buffer's copy too).

    Text keeps its place with U+FFFD for what could not be encoded; any other
    event becomes an ``internal_error`` event with the same seq and response.
    """
    if isinstance(event, TextDelta):
        text = LONE_SURROGATE.sub("\ufffd", event.seal())
        event.parts = [text]
        event.fields["delta"] = text
        return
    fields = error_fields(
        ErrorCode.INTERNAL_ERROR.value, f"event {event.seq} could not be sent", None
    )
    if event.response_id is not None:
        fields["response_id"] = event.response_id
    event.type = ERROR
    event.fields = fields
    event.size = EVENT_OVERHEAD_BYTES
