"""Realtime ``event_id`` values derived from the native ``seq``.

One native event can become several Realtime events (the first text delta of a
response opens its output item and content part, then carries the text), so an id
names the native event and the position in its translation: ``event_<seq>_<k>``.
Translation is deterministic, so a client that saw ``event_12_1`` has seen every
event up to seq 11 and the first two of seq 12. Events that are not session events
(the dialect's own error answers, ``session.created``) carry ``event_c<n>``: they
are never replayed, and naming one on resume names nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SESSION_EVENT_ID = re.compile(r"event_([1-9][0-9]{0,17})_(0|[1-9][0-9]{0,3})")


def session_event_id(seq: int, index: int) -> str:
    """The id of the ``index``-th Realtime event translated from native event ``seq``."""
    return f"event_{seq}_{index}"


def connection_event_id(counter: int, tag: str = "") -> str:
    """The id of an event that is not replayed (a connection's ``counter``-th such event).

    ``tag`` tells a resumed connection's ids from those of the connections before it.
    """
    return f"event_c{tag}{counter}"


@dataclass(frozen=True, slots=True)
class EventPosition:
    """Where a Realtime event sits in the native sequence."""

    seq: int
    index: int

    @property
    def resume_after_seq(self) -> int:
        """The native ``last_seq`` to resume from: ``seq`` is then replayed and cut."""
        return self.seq - 1

    @property
    def skip(self) -> int:
        """How many of the replayed ``seq``'s translated events the client already has."""
        return self.index + 1


def parse_event_id(event_id: object) -> EventPosition | None:
    """The position named by a session event id; ``None`` for anything else."""
    if type(event_id) is not str:
        return None
    match = _SESSION_EVENT_ID.fullmatch(event_id)
    if match is None:
        return None
    return EventPosition(int(match.group(1)), int(match.group(2)))
