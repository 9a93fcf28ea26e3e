"""A token bucket for inbound messages: abuse closes the connection, bursts are fine."""

from __future__ import annotations


class TokenBucket:
    """``rate`` messages per second on average, up to ``burst`` at once."""

    __slots__ = ("_last", "_tokens", "burst", "rate")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self._tokens = burst
        self._last = now

    def take(self, now: float) -> bool:
        """Spend one token; ``False`` when the bucket is empty (the peer is flooding)."""
        elapsed = now - self._last
        self._last = now
        self._tokens = min(self.burst, self._tokens + elapsed * self.rate)
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True
