"""The relay's hot path: two sockets joined by ``asyncio.Protocol`` callbacks.

Once the client's request head and the worker's response head have been read (with
streams: a one-time cost per connection), both transports are taken over from their
streams with ``set_protocol``. From then on a read on one side is a ``write`` on the
other inside ``data_received``: no stream reader, no copy task, no await per chunk.

Flow control: when one side's write buffer passes its high-water mark the transport
calls ``pause_writing`` on that side, which stops reading the *other* side; the other
side resumes reading at ``resume_writing``. So the bytes the router holds for a peer
that stops reading are bounded per direction by the write buffer's high-water mark
(:data:`WRITE_HIGH_WATER`) plus one read (the event loop's read size, 256 KiB at most
on asyncio and uvloop): the sending peer is then held back by TCP itself.

End of a connection: an EOF on one side is a half-close (``write_eof``) of the other;
TLS has no half-close, so there it closes the other side after its buffered bytes.
After the first EOF the other direction has ``linger_timeout`` to finish. A side lost
with an error aborts the other at once (a worker that dies mid-stream: its client
sees the TCP end promptly); a side closed cleanly closes the other after a flush.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

WRITE_HIGH_WATER = 65536
"""Bytes buffered towards one peer before the other side's reading pauses."""


def _uncounted(size: int) -> None:
    """A side's byte count nobody reads."""


class Side(asyncio.Protocol):
    """One socket of a spliced pair: what it reads goes to ``peer``'s transport."""

    def __init__(self, pair: Splice, counted: Callable[[int], None]) -> None:
        self.pair = pair
        self.counted = counted
        self.transport: asyncio.Transport | None = None
        self.peer: Side | None = None
        self.eof = False
        """This side sent EOF (its peer was half-closed for it)."""
        self.lost = False

    def take_over(self, transport: asyncio.Transport) -> None:
        """Become ``transport``'s protocol (it was a stream's until now)."""
        self.transport = transport
        transport.set_protocol(self)
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)

    # -- reading: straight to the peer --------------------------------------

    def data_received(self, data: bytes) -> None:
        """Forward a read as is; counted per read, not per frame (cheap)."""
        self.counted(len(data))
        peer = self.peer
        if peer is not None and peer.transport is not None:
            peer.transport.write(data)

    def eof_received(self) -> bool:
        """Half-close the peer; keep this transport open for the other direction (TCP)."""
        self.eof = True
        peer = self.peer
        if peer is not None and peer.transport is not None and not peer.transport.is_closing():
            if peer.transport.can_write_eof():
                try:
                    peer.transport.write_eof()
                except OSError:
                    peer.transport.abort()
            else:
                peer.transport.close()  # TLS: no half-close; close after the flush
        self.pair.half_closed()
        # Plain TCP stays open for the other direction; TLS cannot (asyncio warns when
        # asked to), so it closes, and its connection_lost closes the peer after a flush.
        return self.transport is not None and self.transport.can_write_eof()

    # -- writing: backpressure onto the peer's reading ------------------------

    def pause_writing(self) -> None:
        """Our peer-bound buffer is full: stop reading the side that fills it."""
        peer = self.peer
        if peer is not None and peer.transport is not None and not peer.transport.is_closing():
            peer.transport.pause_reading()

    def resume_writing(self) -> None:
        """Drained below the low-water mark: read the filling side again."""
        peer = self.peer
        if peer is not None and peer.transport is not None and not peer.transport.is_closing():
            peer.transport.resume_reading()

    # -- the end ---------------------------------------------------------------

    def connection_lost(self, exc: Exception | None) -> None:
        """An error ends the peer at once; a clean end closes it after a flush."""
        self.lost = True
        peer = self.peer
        if peer is not None and peer.transport is not None and not peer.lost:
            if exc is None:
                peer.transport.close()
            else:
                peer.transport.abort()
        self.pair.side_lost()


class Splice:
    """A client and a worker transport relayed both ways until both are gone."""

    def __init__(
        self,
        linger_timeout: float,
        up_counted: Callable[[int], None] = _uncounted,
        down_counted: Callable[[int], None] = _uncounted,
    ) -> None:
        self.linger_timeout = linger_timeout
        self.client = Side(self, up_counted)
        """Reads the client, writes what the worker sent."""
        self.worker = Side(self, down_counted)
        self.client.peer, self.worker.peer = self.worker, self.client
        self._done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._linger: asyncio.TimerHandle | None = None

    def start(
        self,
        client: asyncio.BaseTransport,
        client_bytes: bytes,
        client_eof: bool,
        worker: asyncio.BaseTransport,
        worker_bytes: bytes,
        worker_eof: bool,
    ) -> None:
        """Take both transports over; ``*_bytes``: read past the heads by their streams,
        delivered first; ``*_eof``: that stream had seen its peer's EOF already."""
        client_t, worker_t = cast(asyncio.Transport, client), cast(asyncio.Transport, worker)
        if not client_t.is_closing() and worker_t.is_closing() and worker_eof:
            # The worker answered and closed at once (a refusal with its body): over TLS,
            # which has no half-close, its stream closed the transport at that end. The
            # client still gets every byte of the answer, then the close.
            if worker_bytes:
                self.worker.counted(len(worker_bytes))
                client_t.write(worker_bytes)
            client_t.close()
            worker_t.abort()
            self._finish()
            return
        if client_t.is_closing() or worker_t.is_closing():
            # Gone during the worker's answer: its stream heard the end, this splice never will.
            client_t.abort()
            worker_t.abort()
            self._finish()
            return
        self.client.take_over(client_t)
        self.worker.take_over(worker_t)
        for side, pending, eof in (
            (self.client, client_bytes, client_eof),
            (self.worker, worker_bytes, worker_eof),
        ):
            if pending:
                side.data_received(pending)
            if eof:
                side.eof_received()
        # A stream pauses reading when its buffer fills; the splice reads from here on
        # (unless a flush above already paused it for backpressure).
        for side in (self.client, self.worker):
            transport = side.transport
            assert transport is not None
            peer_transport = side.peer.transport if side.peer else None
            if not side.eof and not transport.is_closing() and not _paused_writing(peer_transport):
                transport.resume_reading()

    async def wait(self) -> None:
        """Until both sides are gone; cancelled (router stop): abort both."""
        try:
            await asyncio.shield(self._done)
        except asyncio.CancelledError:
            self.abort()
            raise

    def buffered(self) -> int:
        """Bytes the router holds for the two peers now (their write buffers)."""
        return sum(
            side.transport.get_write_buffer_size()
            for side in (self.client, self.worker)
            if side.transport is not None and not side.lost
        )

    def abort(self) -> None:
        """Cut both sides now."""
        for side in (self.client, self.worker):
            if side.transport is not None and not side.lost:
                side.transport.abort()

    def half_closed(self) -> None:
        """One direction ended: both ended closes both; else the other gets the linger."""
        if self.client.eof and self.worker.eof:
            for side in (self.client, self.worker):
                if side.transport is not None:
                    side.transport.close()
        elif self._linger is None and not self._done.done():
            # Bounded, so a peer that never closes cannot pin the connection.
            loop = asyncio.get_running_loop()
            self._linger = loop.call_later(self.linger_timeout, self.abort)

    def side_lost(self) -> None:
        """Done when both sides were lost."""
        if self.client.lost and self.worker.lost:
            self._finish()

    def _finish(self) -> None:
        if self._linger is not None:
            self._linger.cancel()
        if not self._done.done():
            self._done.set_result(None)


def _paused_writing(transport: asyncio.Transport | None) -> bool:
    """Whether ``transport``'s buffer is over its high-water mark (its reader stays paused)."""
    if transport is None:
        return False
    return transport.get_write_buffer_size() > transport.get_write_buffer_limits()[1]


def stream_leftovers(reader: asyncio.StreamReader) -> tuple[bytes, bool]:
    """The bytes a stream read past what was taken from it, and whether it saw EOF.

    ``StreamReader`` has no public way to take its buffer without awaiting; these two
    attributes have been its state since Python 3.4 (and are uvloop's too: it feeds
    asyncio's own ``StreamReader``).
    """
    state: Any = reader
    buffered = bytes(state._buffer)
    state._buffer.clear()
    return buffered, bool(state._eof)
