"""The Transport interface: what a session runtime needs from the connection it serves.

The runtime never talks to a WebSocket: it wakes the transport's writer,
closes it with a code, and the transport pulls numbered events from the
runtime (``SessionRuntime.next_event``) at its own pace. The WebSocket
implementation is :class:`wsserver.transport.websocket.Connection`; the in-process
one is :class:`wsserver.transport.memory.MemoryTransport`.
"""

from __future__ import annotations

from typing import Protocol

from protocol.codes import CLOSE_CODES, CloseCode, Disposition
from protocol.session.inputs import Departure


class Transport(Protocol):
    """One client connection as a session runtime sees it."""

    def wake(self) -> None:
        """There are events to send: the writer pulls them."""
        ...

    def close(self, code: CloseCode, text: str) -> None:
        """Stop sending session events and close with ``code`` (in the background).

        The transport tells the runtime how it left (``SessionRuntime.detach``)
        unless the runtime let it go first.
        """
        ...


def departure_for(code: CloseCode) -> Departure:
    """How a session is left when its transport closes with ``code``.

    A terminal code ends the session; any other leaves it resumable, its running
    response generating on for the grace period.
    """
    terminal = CLOSE_CODES[code].disposition is Disposition.TERMINAL
    return Departure.ENDED if terminal else Departure.LOST
