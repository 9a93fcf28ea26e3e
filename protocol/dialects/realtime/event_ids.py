"""Realtime ``event_id`` values derived from the native ``seq``.

One native event can become several Realtime events (the first text delta of a
response opens its output item and content part, then carries the text), so an id
names the native event and the position in its translation: ``event_<seq>_<k>``.
Translation is deterministic, so a client that saw ``event_12_1`` has seen every
event up to seq 11 and the first two of seq 12. Events that are not session events
(the dialect's own answers, ``session.created``) are never replayed; their id names
the last session event written before them and a counter,
``event_<seq>_<k>_c[<tag>_]<n>`` (``event_0_0_c…`` before any), so whatever id a
client saw last names a point in the stream.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SESSION_EVENT_ID = re.compile(r"event_([1-9][0-9]{0,17})_(0|[1-9][0-9]{0,3})")
_CONNECTION_EVENT_ID = re.compile(
    r"event_(0|[1-9][0-9]{0,17})_(0|[1-9][0-9]{0,3})_c(?:[0-9a-f]{1,16}_)?[1-9][0-9]{0,17}"
)


def session_event_id(seq: int, index: int) -> str:
    """The id of the ``index``-th Realtime event translated from native event ``seq``."""
    return f"event_{seq}_{index}"


def connection_event_id(after: tuple[int, int], counter: int, tag: str = "") -> str:
    """The id of an event that is not replayed (a connection's ``counter``-th such event),
    written after session event ``after`` (``(0, 0)``: none yet).

    ``tag`` tells a resumed connection's ids from those of the connections before it.
    """
    seq, index = after
    return f"event_{seq}_{index}_c{tag + '_' if tag else ''}{counter}"


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


class NotAnEventId(ValueError):
    """A value that is no event id this dialect sends."""


def seen_position(event_id: str) -> EventPosition | None:
    """What a client that saw ``event_id`` last has seen: a session event position, or
    ``None`` for none; :class:`NotAnEventId` for anything else."""
    session = parse_event_id(event_id)
    if session is not None:
        return session
    match = _CONNECTION_EVENT_ID.fullmatch(event_id)
    if match is None:
        raise NotAnEventId(event_id)
    seq, index = int(match.group(1)), int(match.group(2))
    return EventPosition(seq, index) if seq else None
