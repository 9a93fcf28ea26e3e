"""A cap on the WebSocket control frames (pings, unasked pongs) a client may send.

The WebSocket layer answers every ping with a pong by itself, before any of our
code sees a message: a client that floods pings and never reads would make the
worker queue pongs without bound, and pings are not messages, so the per-connection
message rate never sees them. Past the cap the connection is closed with 4005.

The same class bounds the closing handshake on the receiving side: websockets
enforces its close timeout only inside ``send``/``ping``, so a peer that sent a bad
frame (1002, 1007, 1009) and then kept its TCP connection open would hold the
connection and its session until the next keepalive ping; here it is cut at the
close deadline. So is every close sent while the peer reads nothing (a 1007 found
by ``recv``, the 4005 of a ping flood): websockets starts that close's timeout only
once the write buffer has drained, which for such a peer is never. The fast send
path, which never calls ``send``, has no other cut: this one is armed whenever the
handshake starts, since every way into it ends in ``send_data`` or ``data_received``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.frames import Frame, Opcode
from websockets.protocol import Event, State

from protocol.codes import CloseCode
from wsserver.frontdoor.token_bucket import TokenBucket


def control_frame_limited(rate: float, burst: int) -> type[ServerConnection]:
    """A connection class that closes a peer sending more than ``rate`` control frames a
    second on average (``burst`` at once) with 4005 ``flood``."""

    class ControlFrameLimitedConnection(ServerConnection):
        """A server connection that counts the peer's pings and pongs."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._control_frames = TokenBucket(rate, burst, self.loop.time())
            self._closing_flood: asyncio.Task[None] | None = None
            self._cut: asyncio.TimerHandle | None = None

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._cut_at_deadline()

        def send_data(self) -> None:
            super().send_data()
            # A close sent from a coroutine (close(), recv()'s 1007, the 4005 below)
            # waits for the write buffer to drain before its timeout starts: a peer
            # that stopped reading would hold the connection forever.
            self._cut_at_deadline()

        def _cut_at_deadline(self) -> None:
            deadline = self.close_deadline
            if self._cut is None and deadline is not None and self.protocol.state is State.CLOSING:
                self._cut = self.loop.call_at(deadline, self.transport.abort)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._cut is not None:
                self._cut.cancel()
            super().connection_lost(exc)

        def process_event(self, event: Event) -> None:
            if (
                isinstance(event, Frame)
                and self._unasked(event)
                and self._closing_flood is None
                and not self._control_frames.take(self.loop.time())
            ):
                # The pongs already queued go out first; none is answered once the
                # close frame is sent.
                self._closing_flood = self.loop.create_task(
                    self.close(CloseCode.FLOOD, "too many pings")
                )
            super().process_event(event)

        def _unasked(self, frame: Frame) -> bool:
            """A ping, or a pong that answers none of our pings (heartbeats don't count)."""
            if frame.opcode is Opcode.PING:
                return True
            return frame.opcode is Opcode.PONG and bytes(frame.data) not in self.pending_pings

    return ControlFrameLimitedConnection
