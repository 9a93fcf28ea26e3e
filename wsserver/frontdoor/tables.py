"""Per-client state for quotas, in tables whose memory stays bounded.

One table is keyed by client address (an IPv4 address or an IPv6 network), one by
principal. An attacker can make up keys at will — new IPv6 addresses, new client
tokens — so a table must not grow with the keys it has seen:

- an entry is *busy* while it has live connections, sessions or session opens in
  flight; a busy entry is never dropped (it is bounded by what it holds: a socket or
  a session, each costing far more than the entry);
- an entry that is not busy and whose rate buckets are full again remembers
  nothing worth keeping: it is dropped as soon as a table operation passes it;
- past ``max_idle`` entries the least recently used non-busy entries are dropped,
  even mid-refill (forgetting a bucket can only let one client through early,
  never block anyone).

So a table holds at most ``max_idle`` entries beyond its busy ones, and each
operation does O(1) amortized work.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from wsserver.frontdoor.token_bucket import TokenBucket

_SCAN = 4
"""Entries looked at per operation, oldest first: amortized eviction."""


class ClientState:
    """What the quotas know about one address or principal."""

    __slots__ = ("connections", "failed_resumes", "handshakes", "messages", "opening", "sessions")

    def __init__(self) -> None:
        self.connections = 0
        self.opening = 0
        """``session.start`` admitted and not finished yet (the store write is awaited)."""
        self.sessions: set[str] = set()
        """Sessions opened or resumed by this client; ended ones are pruned lazily."""
        self.handshakes: TokenBucket | None = None
        self.messages: TokenBucket | None = None
        self.failed_resumes: TokenBucket | None = None

    def live_sessions(self, live: Callable[[str], bool]) -> int:
        """Sessions still on this worker (attached or detached), pruning ended ones."""
        if self.sessions:
            ended = [session_id for session_id in self.sessions if not live(session_id)]
            self.sessions.difference_update(ended)
        return len(self.sessions)

    def busy(self, live: Callable[[str], bool]) -> bool:
        """Holding a connection or a session: not to be forgotten."""
        return bool(self.connections or self.opening or self.live_sessions(live))

    def settled(self, now: float) -> bool:
        """Every bucket full again: forgetting this entry loses nothing."""
        return all(
            bucket is None or bucket.full(now)
            for bucket in (self.handshakes, self.messages, self.failed_resumes)
        )


class ClientTable:
    """Keyed :class:`ClientState`, least recently used first, bounded (module docstring)."""

    __slots__ = ("_entries", "_live", "evicted", "max_idle")

    def __init__(self, max_idle: int, live: Callable[[str], bool]) -> None:
        self.max_idle = max_idle
        self._live = live
        self._entries: OrderedDict[str, ClientState] = OrderedDict()
        self.evicted = 0
        """Entries dropped so far (for ``/stats`` and tests)."""

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str, now: float) -> ClientState:
        """The entry of ``key``, made if new, marked as just used."""
        state = self._entries.get(key)
        if state is None:
            state = self._entries[key] = ClientState()
        else:
            self._entries.move_to_end(key)
        self._sweep(key, now)
        return state

    def peek(self, key: str) -> ClientState | None:
        """The entry of ``key`` if there is one; nothing is made or reordered."""
        return self._entries.get(key)

    def _sweep(self, keep: str, now: float) -> None:
        entries = self._entries
        for _ in range(_SCAN):
            key, state = next(iter(entries.items()))
            if key == keep:
                return  # the caller holds it; everything else was just moved behind it
            over = len(entries) > self.max_idle
            if state.busy(self._live):
                if not over:
                    return
                entries.move_to_end(key)  # kept; look further for one to drop
            elif over or state.settled(now):
                del entries[key]
                self.evicted += 1
            else:
                return
