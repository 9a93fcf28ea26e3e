"""Resuming a Realtime stream from the last ``event_id`` a client saw.

The translation keeps state (open items, output indexes) that a new connection does
not have, but it is deterministic: translating the same native events into a fresh
state gives the same Realtime events with the same ids. So a resume translates the
native events again from a point where no response was running (the start of the
replay buffer, or any earlier point), drops what the client already has, and sends
the rest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from protocol.dialects.realtime.event_ids import EventPosition
from protocol.dialects.realtime.server_events import RealtimeEvent, translate_event
from protocol.dialects.realtime.state import DialectState


def resume_translation(
    state: DialectState, events: Iterable[dict[str, Any]], seen: EventPosition | None
) -> list[RealtimeEvent]:
    """Translate native ``events`` (in seq order) into ``state``; return those after ``seen``.

    ``state`` must be fresh and ``events`` must start where no response was running,
    or the rebuilt item numbering differs from what the client saw. ``seen`` is the
    position of the client's last event id (``None``: it saw none).
    """
    missed: list[RealtimeEvent] = []
    for message in events:
        translated = translate_event(state, message)
        seq = message.get("seq")
        if seen is None or (type(seq) is int and seq > seen.seq):
            missed.extend(translated)
        elif seq == seen.seq:
            missed.extend(translated[seen.skip :])
    return missed
