"""What is left of a principal's message rate on this worker, for clients that show it.

The Realtime dialect sends it as ``rate_limits.updated`` (its ``requests`` limit: every
client event is a message). Counted per worker, as the quotas are (:mod:`.quotas`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from wsserver.frontdoor.quotas import ConnectionQuota


@dataclass(frozen=True, slots=True)
class PrincipalLimit:
    """One quota of the connection's principal: its bound and what is left now."""

    name: str
    limit: int
    remaining: int
    reset_seconds: float
    """Seconds until ``remaining`` is back at ``limit`` if nothing more is sent."""


def message_allowance(quota: ConnectionQuota) -> PrincipalLimit | None:
    """The principal's message bucket (``--message-burst-per-principal`` at
    ``--messages-per-second-per-principal``) as it is now; ``None`` when no limit is set."""
    state, quotas = quota.principal, quota.quotas
    limits = quotas.limits
    burst = limits.message_burst_per_principal
    if state is None or not burst:
        return None
    rate = limits.messages_per_second_per_principal
    bucket = state.messages
    available = float(burst) if bucket is None else bucket.available(quotas.clock())
    reset = (burst - available) / rate if rate > 0 else 0.0
    return PrincipalLimit("messages", burst, math.floor(available), round(reset, 3))
