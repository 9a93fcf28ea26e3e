"""A transport inside the process: the caller pulls the session's events itself.

The in-process :class:`~wsserver.transport.base.Transport`, beside the WebSocket
one: an embedded client (or a test) attaches it to a session runtime, sends
it client messages through the runtime, and takes the numbered events with
:meth:`MemoryTransport.take`, exactly as a connection's writer would.
"""

from __future__ import annotations

import asyncio

from protocol.codes import CLOSE_CODES, CloseCode
from protocol.events import RESPONSE_DONE, Event
from wsserver.transport.base import SessionEndpoint, departure_for


class MemoryTransport:
    """Events pulled on demand; a close detaches it from its runtime like a socket's."""

    __slots__ = ("_woken", "closed", "runtime", "wakes")

    def __init__(self) -> None:
        self.runtime: SessionEndpoint | None = None
        self.wakes = 0
        """How many times the runtime said there was something to send."""
        self.closed: tuple[CloseCode, str] | None = None
        """The code and text it was closed with, once closed."""
        self._woken = asyncio.Event()

    def attach(self, runtime: SessionEndpoint) -> None:
        """Carry ``runtime``'s session from now on."""
        runtime.attach(self)
        self.runtime = runtime

    def wake(self) -> None:
        """There are events to take."""
        self.wakes += 1
        self._woken.set()

    def close(self, code: CloseCode, text: str) -> None:
        """Stop carrying the session; it learns how it was left from the code."""
        if self.closed is not None:
            return
        self.closed = (code, text)
        runtime, self.runtime = self.runtime, None
        if runtime is not None:
            runtime.detach(self, departure_for(code), reason=CLOSE_CODES[code].name)

    def take(self) -> list[Event]:
        """Every event ready now, numbered (a writer's pull, without the socket)."""
        runtime = self.runtime
        events: list[Event] = []
        while runtime is not None and (event := runtime.next_event()) is not None:
            events.append(event)
            if event.type == RESPONSE_DONE:
                runtime.settle()
        return events

    async def until(self, event_type: str) -> list[Event]:
        """Take events, waiting for wakes, until one of ``event_type`` came; all of them."""
        events: list[Event] = []
        while not any(e.type == event_type for e in events):
            self._woken.clear()
            taken = self.take()
            events += taken
            if not taken and self.runtime is not None:
                await self._woken.wait()
            elif self.runtime is None and not taken:
                raise ConnectionError(f"closed before {event_type}: {self.closed}")
        return events
