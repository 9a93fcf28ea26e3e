"""One WebSocket connection: a reader and a writer running side by side.

The reader validates client messages and applies them at once, so an
interrupt is handled while output streams (control never waits behind
output). The writer sends connection messages first, then replayed events,
then new session events pulled from the session's outbox.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from protocol.audio_frame import is_audio_frame
from protocol.codes import CloseCode, ErrorCode
from protocol.encoding import codec_for
from protocol.errors import ProtocolViolation
from protocol.events import PONG, Event, connection_message, error_fields
from protocol.messages import Ping, SessionResume, SessionStart, parse_client_message
from wsserver.ratelimit import TokenBucket

if TYPE_CHECKING:
    from wsserver.runtime import SessionRuntime
    from wsserver.server import WorkerServer

log = logging.getLogger(__name__)


class Connection:
    """Reader and writer tasks of one client connection."""

    def __init__(self, ws: ServerConnection, server: WorkerServer) -> None:
        self.ws = ws
        self.server = server
        self.codec = codec_for(ws.subprotocol)
        self.runtime: SessionRuntime | None = None
        self._control: deque[dict[str, Any]] = deque()
        self._replay: deque[Event] = deque()
        self._wake = asyncio.Event()
        self._closing = False
        self.sent_events = 0
        settings = server.settings
        self._inbound = TokenBucket(
            settings.max_messages_per_second,
            settings.max_message_burst,
            asyncio.get_running_loop().time(),
        )
        if server.settings.socket_send_buffer:
            sock = ws.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(
                    socket.SOL_SOCKET, socket.SO_SNDBUF, server.settings.socket_send_buffer
                )

    # -- called by the runtime and the server ----------------------------

    def wake(self) -> None:
        """Something is ready to send."""
        self._wake.set()

    def send_control(self, message: dict[str, Any]) -> None:
        """Queue a connection-level message (ahead of session events)."""
        self._control.append(message)
        self._wake.set()

    def start_replay(self, events: list[Event]) -> None:
        """Queue events a resuming client missed."""
        self._replay.extend(events)
        self._wake.set()

    def close_slow_consumer(self) -> None:
        """The outbox passed its hard bound: close with 4000 so the client resumes."""
        self.close(CloseCode.SLOW_CONSUMER, "slow consumer: resume")

    def close(self, code: int, reason: str, *, abort_response: bool = False) -> None:
        """Stop writing session events and close the socket in the background.

        Unless ``abort_response``, the session keeps running detached (grace period)
        because the client is expected to resume.
        """
        if self._closing:
            return
        self._closing = True
        runtime = self.runtime
        if runtime is not None:
            runtime.detach(self, explicit=abort_response, reason=reason)
            self.runtime = None
        self.server.spawn(self.ws.close(code, reason))

    # -- lifecycle -------------------------------------------------------

    async def run(self) -> None:
        """Serve the connection until it closes."""
        writer = asyncio.create_task(self._write_loop(), name="connection writer")
        loop = asyncio.get_running_loop()
        handshake_timer = loop.call_later(
            self.server.settings.handshake_timeout, self._no_handshake
        )
        explicit = False
        try:
            async for frame in self.ws:
                await self._on_frame(frame)
        except ConnectionClosed:
            pass
        finally:
            handshake_timer.cancel()
            # A close frame from the client is an explicit close; anything else is a drop.
            explicit = self.ws.protocol.close_rcvd is not None and not self._closing
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
            runtime = self.runtime
            self.runtime = None
            if runtime is not None:
                runtime.detach(self, explicit=explicit)

    def _no_handshake(self) -> None:
        if self.runtime is None and not self._closing:
            self.close(CloseCode.HANDSHAKE_TIMEOUT, "no session.start or session.resume")

    # -- reading ---------------------------------------------------------

    async def _on_frame(self, frame: str | bytes) -> None:
        if self._closing:
            return
        if not self._inbound.take(asyncio.get_running_loop().time()):
            # Abuse is terminal: nobody should come back for the running response.
            self.close(CloseCode.FLOOD, "flood", abort_response=True)
            return
        try:
            if isinstance(frame, bytes) and is_audio_frame(frame):
                raise ProtocolViolation(
                    ErrorCode.INVALID_FRAME, "audio input is not enabled on this server"
                )
            message = parse_client_message(self.codec.decode(frame))
        except ProtocolViolation as violation:
            self.reject(violation)
            return
        if isinstance(message, Ping):
            self.send_control(connection_message(PONG, request_id=message.id))
        elif isinstance(message, SessionStart | SessionResume):
            if self.runtime is not None:
                self.reject(
                    ProtocolViolation(
                        ErrorCode.SESSION_ALREADY_OPEN,
                        f"this connection already carries session {self.runtime.session_id}",
                        message.id,
                    )
                )
            elif isinstance(message, SessionStart):
                await self.server.open_session(self, message)
            else:
                await self.server.resume_session(self, message)
        elif self.runtime is None:
            self.reject(
                ProtocolViolation(
                    ErrorCode.NO_SESSION, f"{message.type} needs a session", message.id
                )
            )
        else:
            self.runtime.handle(message)

    def reject(self, violation: ProtocolViolation) -> None:
        """Answer a bad message in-band; sequenced once a session exists."""
        runtime = self.runtime
        if runtime is not None:
            runtime.session.queue_error(violation)
            self.wake()
        else:
            fields = error_fields(violation.code.value, violation.message, violation.request_id)
            self.send_control(connection_message("error", **fields))

    # -- writing ---------------------------------------------------------

    async def _write_loop(self) -> None:
        ws = self.ws
        encode = self.codec.encode
        control = self._control
        replay = self._replay
        try:
            while True:
                self._wake.clear()
                while True:
                    if control:
                        await ws.send(encode(control.popleft()))
                        continue
                    if replay:
                        await ws.send(encode(replay.popleft().to_message()))
                        continue
                    runtime = self.runtime
                    if runtime is None or self._closing:
                        break
                    event = runtime.session.next_event()
                    if event is None:
                        break
                    await ws.send(encode(event.to_message()))
                    self.sent_events += 1
                    if event.type == "response.done":
                        runtime.settle()
                await self._wake.wait()
        except ConnectionClosed:
            return
