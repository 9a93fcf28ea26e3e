"""Resuming a Realtime stream from the last ``event_id`` a client saw.

The translation keeps state (open items, output indexes) that a new connection does
not have, but it is deterministic: translating the same native events into a fresh
state gives the same Realtime events with the same ids. So a resume translates the
native events again from a point where no response was running (the start of the
replay buffer, or any earlier point), drops what the client already has, and sends
the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from protocol.dialects.realtime.errors import DialectError
from protocol.dialects.realtime.event_ids import (
    EventPosition,
    NotAnEventId,
    seen_position,
    session_event_id,
)
from protocol.dialects.realtime.server_events import RealtimeEvent, translate_event
from protocol.dialects.realtime.state import DialectState
from protocol.messages import MAX_ID_LENGTH


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


SESSION_HEADER = "X-Wsserver-Session"
TOKEN_HEADER = "X-Wsserver-Resume-Token"
LAST_EVENT_HEADER = "X-Wsserver-Last-Event-Id"
MAX_TOKEN_LENGTH = 256


@dataclass(frozen=True, slots=True)
class ResumeRequest:
    """A reconnect that asks to resume a session (the headers of its handshake)."""

    session_id: str
    resume_token: str
    seen: EventPosition | None
    """The client's last session event (``None``: it saw none)."""

    @property
    def last_seq(self) -> int:
        """The native ``last_seq``: everything before the seen event's seq is the client's."""
        return 0 if self.seen is None else self.seen.resume_after_seq


class ResumeRequestInvalid(DialectError):
    """Resume headers that cannot be served as they are (refused, never a fresh session)."""


REFUSAL_CODES = frozenset({"invalid_resume_request", "resume_token_in_query", "invalid_event_id"})
"""The codes of :class:`ResumeRequestInvalid`: the dialect's own, beside the native ones."""


def resume_request(headers: Mapping[str, str], query: str) -> ResumeRequest | None:
    """The resume a handshake asks for, ``None`` for a new session, or
    :class:`ResumeRequestInvalid`.

    ``headers`` holds the handshake's headers (names case-insensitive, each once).
    A resume token in the query is refused: URLs end up in access logs.
    """
    if "resume_token" in parse_qs(query, keep_blank_values=True):
        raise ResumeRequestInvalid(
            "resume_token_in_query",
            f"send the resume token in the {TOKEN_HEADER} header, never in the query",
        )
    session_id, token = headers.get(SESSION_HEADER), headers.get(TOKEN_HEADER)
    last = headers.get(LAST_EVENT_HEADER)
    if session_id is None and token is None and last is None:
        return None
    if not session_id or not token:
        raise ResumeRequestInvalid(
            "invalid_resume_request",
            f"a resume needs both {SESSION_HEADER} and {TOKEN_HEADER}",
        )
    if len(session_id) > MAX_ID_LENGTH or len(token) > MAX_TOKEN_LENGTH:
        raise ResumeRequestInvalid("invalid_resume_request", "resume header too long")
    seen = None
    if last is not None:
        try:
            seen = seen_position(last)
        except NotAnEventId:
            raise ResumeRequestInvalid(
                "invalid_event_id", f"{LAST_EVENT_HEADER} must be the last event_id received"
            ) from None
    return ResumeRequest(session_id, token, seen)


def check_replay(
    state: DialectState, events: Iterable[dict[str, Any]], seen: EventPosition | None
) -> None:
    """Translate these native events (from a quiet point, in seq order), all of them,
    and raise :class:`ResumeRequestInvalid` if ``seen`` names no event they translate
    to: a client cannot have seen an event the server never sent.

    Any other exception is an event the translation cannot take (a damaged stored
    entry): the replay cannot be served, past the seen event or before it. (Past a
    seen seq that is absent nothing more is translated: that is refused already.)
    """
    if seen is None:
        for message in events:
            translate_event(state, message)
        return
    found = False
    for message in events:
        seq = message["seq"]
        if seq > seen.seq and not found:
            break  # past the seen event's seq: it was never sent
        if len(translate_event(state, message)) > seen.index and seq == seen.seq:
            found = True
    if found:
        return
    raise ResumeRequestInvalid(
        "invalid_event_id", f"event {session_event_id(seen.seq, seen.index)} was never sent"
    )
