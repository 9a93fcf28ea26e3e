"""The worker's policy for its sessions: timings, retries, where output is logged."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CoreSettings:
    """The worker's policy for its sessions (timings in seconds)."""

    grace_period: float = 30.0
    """A detached session's running response generates on this long."""
    resume_window: float = 300.0
    """A detached session is kept this long for its client to resume."""
    tool_timeout: float = 60.0
    """How long an emitted tool call waits for its result (the session's limit wins)."""
    tool_retries: int = 0
    """Times the engine writes a call again after invalid arguments (0: the response fails)."""
    log_shared: bool = False
    """A shared store keeps the event log: output of a detached session is numbered at once."""
    max_turn_ms: int = 60_000
    """The longest input turn; the audio kept for the engine is bounded by it."""
