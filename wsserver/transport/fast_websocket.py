"""The native connection with a synchronous send path (``--ws-engine fast``).

websockets still does the handshake, the HTTP endpoints and everything a client
sends (frame parsing, masking, RSV bits, UTF-8, message size across fragments,
control-frame answers, keepalive pings, the closing handshake): those checks and
close codes are unchanged. What changes is the hot path, one frame per token:

* no writer task: :meth:`FastConnection.wake` queues a flush, which pulls every ready
  event from the runtime and writes its frame to the transport at once; every
  connection woken in one loop turn (a decode step's tokens) is flushed by one loop
  callback (:mod:`wsserver.transport.flush_queue`), not a task wake-up per frame;
* no asyncio send layer: the frame header is built here and the frame goes to
  ``transport.write`` directly (websockets' ``send`` costs ~9 µs a frame in locks,
  futures and its sans-I/O frame object);
* text deltas are formatted with orjson (byte-identical to the stdlib encoder
  with ``ensure_ascii=False`` for every code point; a lone surrogate raises and
  the event is voided as before).

Backpressure is the same: past ``--write-limit`` bytes unsent in the transport
the flush stops pulling, so events wait (and merge) in the runtime's outbox, and
its hard bound closes with 4000. A flush resumes when the transport drains.
"""

from __future__ import annotations

import asyncio
import logging
import struct

import orjson
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from protocol.codes import CloseCode
from protocol.encoding import JSON_SUBPROTOCOL
from protocol.event_repair import EventNotEncodable, void_event
from protocol.events import TEXT_DELTA, Event, TextDelta
from wsserver.transport.base import ConnectionHost
from wsserver.transport.flush_queue import flush_queue
from wsserver.transport.websocket import Connection, describe_failure

log = logging.getLogger(__name__)

_TEXT_DELTA_HEAD = b'{"type":"' + TEXT_DELTA.encode() + b'","seq":'
_SHORT = struct.Struct("!BB")
_MEDIUM = struct.Struct("!BBH")
_LONG = struct.Struct("!BBQ")


def frame_header(length: int, text: bool) -> bytes:
    """An unmasked, final, uncompressed server frame's header (RFC 6455 §5.2)."""
    first = 0x81 if text else 0x82
    if length < 126:
        return _SHORT.pack(first, length)
    if length < 65536:
        return _MEDIUM.pack(first, 126, length)
    return _LONG.pack(first, 127, length)


def encode_text_delta(event: TextDelta) -> bytes:
    """A text delta's JSON, as :class:`protocol.encoding.JsonCodec` writes it, in bytes."""
    fields = event.fields
    return b'%b%d,"response_id":%b,"delta":%b}' % (
        _TEXT_DELTA_HEAD,
        event.seq,
        orjson.dumps(fields["response_id"]),
        orjson.dumps(fields["delta"]),
    )


class FastConnection(Connection):
    """A native connection whose session events are written by a loop callback."""

    __slots__ = (
        "_drain_task",
        "_flush_scheduled",
        "_flushes",
        "_json",
        "_live",
        "_loop",
        "_plain",
    )

    def __init__(self, ws: ServerConnection, server: ConnectionHost) -> None:
        super().__init__(ws, server)
        self._loop = asyncio.get_running_loop()
        self._flushes = flush_queue(self._loop)
        self._flush_scheduled = False
        self._live = False
        self._drain_task: asyncio.Task[None] | None = None
        self._json = ws.subprotocol in (None, JSON_SUBPROTOCOL)
        # permessage-deflate frames need websockets' encoder: the slower sync path then.
        self._plain = not ws.protocol.extensions

    def wake(self) -> None:
        """Something is ready to send: flush once, soon (coalesces a burst of wakes, and
        joins the other connections woken in this loop turn in one callback)."""
        if not self._flush_scheduled and self._live:
            self._flush_scheduled = True
            self._flushes.add(self._flush)

    async def _write_loop(self) -> None:
        """No writer task work: mark the connection live and wait to be cancelled."""
        self._live = True
        self._flush_scheduled = True
        self._loop.call_soon(self._flush)
        try:
            await asyncio.Future()
        finally:
            self._live = False
            if self._drain_task is not None:
                self._drain_task.cancel()

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._live or self._drain_task is not None:
            return
        try:
            self._write_ready()
        except ConnectionClosed:
            return
        except Exception as exc:
            # Never die silently: a writer that stops leaves the client waiting forever.
            log.error("connection writer failed: %s", describe_failure(exc))
            self.close(CloseCode.INTERNAL_ERROR, "internal error: resume")

    def _write_ready(self) -> None:
        """Write every frame that is ready, until the transport's buffer is full."""
        ws = self.ws
        transport = ws.transport
        next_frame = self._next_frame
        # _put_frame's plain case inline: one call per frame fewer, which pays for
        # the shared _next_frame step's own call.
        plain = self._plain
        while True:
            if ws.protocol.state is not State.OPEN:
                # Nothing follows a close frame. This path never calls websockets'
                # send, which is where it enforces the close timeout: the connection
                # class cuts the handshake at its deadline instead (control_frames).
                return
            if transport.is_closing():
                # A write failed (the peer reset the connection): asyncio drops every
                # later write with a warning, and connection_lost is already on its way.
                return
            if ws.paused:
                self._drain_task = self._loop.create_task(self._after_drain())
                return
            frame = next_frame()
            if frame is None:
                return
            if plain:
                data, text = frame
                transport.write(frame_header(len(data), text) + data)
            else:
                self._put_frame(frame)

    async def _after_drain(self) -> None:
        """Wait for the transport to drain, then flush again."""
        try:
            await self.ws.drain()
        except OSError:
            # The connection was lost while paused (reset by the peer): the reader ends
            # it; an exception left in this task would only be logged as never retrieved.
            return
        finally:
            self._drain_task = None
        self._flush()

    def _encode_event(self, event: Event) -> tuple[bytes, bool]:
        if self._json and type(event) is TextDelta:
            try:
                return encode_text_delta(event), True
            except Exception as exc:
                void_event(event)
                raise EventNotEncodable(f"event {event.seq} could not be encoded: {exc}") from exc
        return super()._encode_event(event)

    def _put_frame(self, frame: tuple[bytes, bool]) -> None:
        data, text = frame
        ws = self.ws
        if self._plain:
            ws.transport.write(frame_header(len(data), text) + data)
            return
        if text:
            ws.protocol.send_text(data)
        else:
            ws.protocol.send_binary(data)
        ws.send_data()

    async def _send(self, frame: tuple[bytes, bool]) -> None:
        self._put_frame(frame)
