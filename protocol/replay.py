"""The replay buffer: recent sent events, kept so a reconnecting client can resume."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from itertools import islice
from typing import Any

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation, ResumeRefused
from protocol.events import Event

EVENT_MEMORY_BYTES = 384
"""What holding one event costs in memory beyond its ``size`` (its object, its
field dict, the containers), measured on CPython 3.11. The replay buffer and the
outbox count it, so their byte bounds bound memory, not only payload."""


_MAX_EVICTED_RUNS = 64


def memory_of(event: Event) -> int:
    """Approximate bytes one held event costs: its size plus the object overhead."""
    return event.size + EVENT_MEMORY_BYTES


class ReplayBuffer:
    """Sequenced events, bounded by count and bytes, trimmed by client acks.

    Bytes are the approximate memory held (:func:`memory_of`), so the bound
    holds for a backlog of one-token events as for a few merged ones.

    When a bound is hit the oldest events are forgotten even if unacked; a
    client that then resumes from before them gets an explicit refusal rather
    than a hole.
    """

    __slots__ = (
        "_bytes",
        "_events",
        "_evicted",
        "acked_seq",
        "forgotten_unacked",
        "last_seq",
        "max_bytes",
        "max_events",
    )

    def __init__(self, max_events: int, max_bytes: int) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._events: deque[Event] = deque()
        self._bytes = 0
        self.last_seq = 0
        self.acked_seq = 0
        self.forgotten_unacked = 0
        """Events dropped by the bounds before the client acked them."""
        self._evicted: deque[list[Any]] = deque()
        """[last seq, response id, tokens] of unacked events forgotten by the bounds,
        one entry per run of one response's events: a later ack still credits them."""

    @property
    def first_seq(self) -> int:
        """Seq of the oldest buffered event (``last_seq + 1`` when empty)."""
        return self._events[0].seq if self._events else self.last_seq + 1

    @property
    def nbytes(self) -> int:
        """Memory (approximate bytes) held by the buffer's events."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._events)

    def start_after(self, seq: int) -> None:
        """Continue numbering after ``seq`` (an empty buffer restored on another worker)."""
        if self._events:
            raise ValueError("start_after needs an empty buffer")
        self.last_seq = self.acked_seq = seq

    def append(self, event: Event) -> None:
        """Keep a just-sequenced event; its seq must follow the last one."""
        if event.seq != self.last_seq + 1:
            raise ValueError(f"seq {event.seq} does not follow {self.last_seq}")
        events = self._events
        events.append(event)
        self._bytes += event.size + EVENT_MEMORY_BYTES  # memory_of(event), once per frame
        self.last_seq = event.seq
        while events and (len(events) > self.max_events or self._bytes > self.max_bytes):
            old = events.popleft()
            self._bytes -= memory_of(old)
            if old.seq > self.acked_seq:
                self.forgotten_unacked += 1
                if old.tokens and old.response_id is not None:
                    self._remember_evicted(old)

    def _remember_evicted(self, event: Event) -> None:
        evicted = self._evicted
        if evicted and evicted[-1][1] == event.response_id:
            evicted[-1][0] = event.seq
            evicted[-1][2] += event.tokens
            return
        evicted.append([event.seq, event.response_id, event.tokens])
        if len(evicted) > _MAX_EVICTED_RUNS:
            evicted.popleft()  # never credited: an ack that old is not coming

    def ack(self, seq: int) -> list[tuple[str, int]]:
        """Forget every event up to ``seq``: the client has them.

        Returns the tokens this ack newly covers, as ``(response_id, tokens)``.
        """
        if seq > self.last_seq:
            raise ProtocolViolation(
                ErrorCode.INVALID_SEQ, f"ack {seq} is ahead of last seq {self.last_seq}"
            )
        credited: list[tuple[str, int]] = []
        if seq <= self.acked_seq:
            return credited
        self.acked_seq = seq
        evicted = self._evicted
        # A run the ack covers only in part is not credited: an undercount, never more.
        while evicted and evicted[0][0] <= seq:
            _, response_id, tokens = evicted.popleft()
            credited.append((response_id, tokens))
        events = self._events
        while events and events[0].seq <= seq:
            event = events.popleft()
            self._bytes -= memory_of(event)
            if event.tokens and event.response_id is not None:
                credited.append((event.response_id, event.tokens))
        return credited

    def after(self, last_seq: int) -> Iterable[Event]:
        """Events with seq > ``last_seq``, or a refusal if some are gone."""
        if last_seq > self.last_seq:
            raise ResumeRefused(
                ErrorCode.INVALID_SEQ,
                f"last_seq {last_seq} is ahead of the session's last seq {self.last_seq}",
            )
        if last_seq + 1 < self.first_seq:
            raise ResumeRefused(
                ErrorCode.REPLAY_UNAVAILABLE,
                f"events {last_seq + 1}..{self.first_seq - 1} are no longer buffered",
            )
        skip = last_seq + 1 - self.first_seq
        return list(islice(self._events, skip, None))
