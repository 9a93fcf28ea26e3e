"""The session's timers: the core arms and cancels them, a firing comes back as an input."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from protocol.session.inputs import TimerKind


class SessionTimers:
    """At most one armed timer of each kind, on the running loop."""

    __slots__ = ("_fire", "_handles")

    def __init__(self, fire: Callable[[TimerKind], None]) -> None:
        self._fire = fire
        self._handles: dict[TimerKind, asyncio.TimerHandle] = {}

    def arm(self, kind: TimerKind, delay: float) -> None:
        """Start the timer of ``kind`` (a running one starts over)."""
        self.cancel(kind)
        loop = asyncio.get_running_loop()
        self._handles[kind] = loop.call_later(delay, self._fired, kind)

    def cancel(self, kind: TimerKind) -> None:
        """Stop the timer of ``kind`` if it is armed."""
        handle = self._handles.pop(kind, None)
        if handle is not None:
            handle.cancel()

    def cancel_all(self) -> None:
        """Stop every timer."""
        for kind in list(self._handles):
            self.cancel(kind)

    def _fired(self, kind: TimerKind) -> None:
        self._handles.pop(kind, None)
        self._fire(kind)
