"""A token bucket: abuse is refused, bursts are fine.

Used for inbound messages per connection and, in the front door, for handshakes
per IP, messages per principal and failed resumes. The caller passes ``now``
(a monotonic clock), so a bucket is tested without sleeping.
"""

from __future__ import annotations


class TokenBucket:
    """``rate`` tokens per second on average, up to ``burst`` at once."""

    __slots__ = ("_last", "_tokens", "burst", "rate")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self._tokens = burst
        self._last = now

    def _refill(self, now: float) -> float:
        # A clock that went backwards (tests, another loop) adds nothing.
        elapsed = max(0.0, now - self._last)
        self._last = max(self._last, now)
        self._tokens = min(self.burst, self._tokens + elapsed * self.rate)
        return self._tokens

    def take(self, now: float) -> bool:
        """Spend one token; ``False`` when the bucket is empty (the peer is flooding)."""
        if self._refill(now) < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def refund(self) -> None:
        """Give back a token taken for something that turned out not to count."""
        self._tokens = min(self.burst, self._tokens + 1.0)

    def retry_after(self, now: float) -> float:
        """Seconds until one token is available (0 when one is)."""
        missing = 1.0 - self._refill(now)
        return max(0.0, missing / self.rate) if self.rate > 0 else float("inf")

    def full(self, now: float) -> bool:
        """Whether the bucket is back at its burst: forgetting it loses nothing."""
        return self._refill(now) >= self.burst

    def available(self, now: float) -> float:
        """Tokens there are now (whole ones can be spent)."""
        return self._refill(now)
