"""The wait between reconnect attempts."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    """Jittered exponential backoff between reconnect attempts ("full jitter")."""

    base: float = 0.1
    cap: float = 5.0
    max_attempts: int = 12

    def delay(self, attempt: int) -> float:
        """Seconds to wait before reconnect attempt ``attempt`` (0-based)."""
        return random.uniform(0, min(self.cap, self.base * (2**attempt)))
