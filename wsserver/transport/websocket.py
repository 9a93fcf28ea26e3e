"""One WebSocket connection: a reader and a writer running side by side.

The reader validates client messages, answers the connection-level ones (ping,
session.start, session.resume) and hands every other one to the session
runtime at once, so an interrupt is handled while output streams (control
never waits behind output) and never waits for the store. The writer sends
connection messages first, then replayed events, then new session events it
pulls from the runtime. This is the WebSocket :class:`~wsserver.transport.base.Transport`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from protocol.audio_frame import is_audio_frame
from protocol.codes import CLOSE_CODES, CloseCode, ErrorCode
from protocol.encoding import codec_for
from protocol.errors import ProtocolViolation
from protocol.event_repair import EventNotEncodable, void_event
from protocol.events import (
    PONG,
    Event,
    connection_message,
    error_fields,
)
from protocol.messages import (
    ClientMessage,
    Ping,
    SessionResume,
    SessionStart,
    parse_client_message,
)
from protocol.session import ServerSession
from wsserver.frontdoor.token_bucket import TokenBucket
from wsserver.transport.base import ConnectionHost, SessionEndpoint, departure_for
from wsserver.transport.close_handshake import departure_of

if TYPE_CHECKING:
    from wsserver.frontdoor.quotas import ConnectionQuota

log = logging.getLogger(__name__)

# Connection-level answers (pongs, errors before a session) queued for a client that
# does not read them; ~1 MiB of small dicts at most. A reading client has a few.
MAX_QUEUED_CONTROL = 4096


class Connection:
    """Reader and writer tasks of one client connection."""

    __slots__ = (
        "_ack_mark",
        "_closing",
        "_control",
        "_inbound",
        "_replay",
        "_waiter",
        "_wake_pending",
        "codec",
        "quota",
        "runtime",
        "server",
        "ws",
    )

    def __init__(self, ws: ServerConnection, server: ConnectionHost) -> None:
        self.ws = ws
        self.server = server
        self.codec = codec_for(ws.subprotocol)
        self.runtime: SessionEndpoint | None = None
        self.quota: ConnectionQuota = server.front_door.quotas.unlimited()
        """This connection's share of its principal's quotas (set by the server)."""
        # Plain list and a lazily made deque: an idle connection should cost little.
        self._control: list[dict[str, Any]] = []
        self._replay: deque[Event] | None = None
        # A bare future instead of asyncio.Event: wake() runs once per token.
        self._waiter: asyncio.Future[None] | None = None
        self._wake_pending = False
        self._closing = False
        self._ack_mark: tuple[int, float] | None = None
        """(seq, when it was written) of an event the client has not acked yet."""
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

    def bind(self, runtime: SessionEndpoint) -> None:
        """Carry ``runtime``'s session from now on (it attached this connection)."""
        self.runtime = runtime

    def wake(self) -> None:
        """Something is ready to send."""
        waiter = self._waiter
        if waiter is None:
            self._wake_pending = True
        elif not waiter.done():
            waiter.set_result(None)

    def send_control(self, message: dict[str, Any]) -> None:
        """Queue a connection-level message (ahead of session events).

        The queue is bounded: a client that keeps asking (application pings, messages
        refused before a session) and reads none of the answers is closed with 4000,
        as one whose outbox passed its bound, instead of growing the queue forever.
        """
        if len(self._control) >= MAX_QUEUED_CONTROL:
            self.close_slow_consumer("slow consumer: answers not read; resume")
            return
        self._control.append(message)
        self.wake()

    def stored_resume_check(self) -> Callable[[ServerSession, int], bool] | None:
        """A dialect's check of a resume against a session another worker owned, as the
        store would restore it (its session and acked seq), run before the claim; one
        that refuses has answered the client. None: nothing to check."""
        return None

    def vet_resume(self, runtime: SessionEndpoint) -> bool:
        """Whether a resume the session accepted goes on (a dialect may refuse it here,
        before it replaces the session's live connection)."""
        return True

    def start_replay(self, events: list[Event]) -> bool:
        """Queue events a resuming client missed; whether the resume goes on (a
        dialect may refuse it here instead, having answered the client)."""
        if self._replay is None:
            self._replay = deque(events)
        else:
            self._replay.extend(events)
        self.wake()
        return True

    def close_slow_consumer(self, text: str = "slow consumer: resume") -> None:
        """The outbox passed its hard bound: close with 4000 so the client resumes."""
        self.close(CloseCode.SLOW_CONSUMER, text)

    def close(self, code: CloseCode, text: str) -> None:
        """Stop writing session events and close the socket in the background.

        With a resume code the session stays detached (grace period) for the client
        to come back; with a terminal code its response is aborted and it ends.
        """
        if self._closing:
            return
        self._closing = True
        self.server.metrics.closed(code)
        runtime = self.runtime
        if runtime is not None:
            runtime.detach(self, departure_for(code), reason=CLOSE_CODES[code].name)
            self.runtime = None
        settings = self.server.settings
        # A slow consumer gets longer to read what is queued before its close frame.
        timeout = (
            settings.slow_consumer_close_timeout
            if code == CloseCode.SLOW_CONSUMER
            else settings.close_timeout
        )
        self.server.spawn(self._close(code, text, timeout))

    async def _close(self, code: CloseCode, text: str, timeout: float) -> None:
        """The closing handshake, cut after ``timeout`` seconds in every case.

        The close frame queues behind what the socket has not sent yet (at most
        ``--write-limit`` plus one frame here, and the kernel's buffers): a client
        that reads it all within ``timeout`` sees the code, a client that does
        not sees the TCP connection cut (1006). websockets bounds only the wait
        for the client's close frame, not the wait for the queue to drain.
        """
        ws = self.ws
        ws.close_timeout = timeout
        try:
            async with asyncio.timeout(timeout):
                await ws.close(code, text)
        except TimeoutError:
            ws.transport.abort()

    # -- lifecycle -------------------------------------------------------

    async def run(self) -> None:
        """Serve the connection until it closes."""
        writer = asyncio.create_task(self._write_loop(), name="connection writer")
        loop = asyncio.get_running_loop()
        handshake_timer = loop.call_later(
            self.server.settings.handshake_timeout, self._no_handshake
        )
        try:
            async for frame in self.ws:
                await self._on_frame(frame)
        except ConnectionClosed:
            pass
        except Exception as exc:
            # One line, no traceback: the client is told (1011) and resumes.
            log.error("connection reader failed: %s", describe_failure(exc))
            self.close(CloseCode.INTERNAL_ERROR, "internal error: resume")
        finally:
            handshake_timer.cancel()
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
            runtime = self.runtime
            self.runtime = None
            if runtime is not None:
                departure, reason = departure_of(self.ws.protocol)
                runtime.detach(self, departure, reason=reason)

    def _no_handshake(self) -> None:
        if self.runtime is None and not self._closing:
            self.close(CloseCode.HANDSHAKE_TIMEOUT, "no session.start or session.resume")

    # -- reading ---------------------------------------------------------

    async def _on_frame(self, frame: str | bytes) -> None:
        if self._closing:
            return
        if not self._inbound.take(asyncio.get_running_loop().time()):
            # Abuse is terminal: nobody should come back for the running response.
            self.close(CloseCode.FLOOD, "too many messages")
            return
        if wait_ms := self.quota.message():  # the principal's rate, across its connections
            self.close(CloseCode.RATE_LIMITED, f"rate limited; retry_after_ms={wait_ms}")
            return
        await self._on_data(frame)

    async def _on_data(self, frame: str | bytes) -> None:
        """A frame that passed the rate limits: audio, or a message to parse and dispatch."""
        if isinstance(frame, bytes) and is_audio_frame(frame):
            if self.runtime is None:
                self.reject(ProtocolViolation(ErrorCode.NO_SESSION, "audio needs a session"))
            else:
                try:
                    self.runtime.audio_frame(frame)
                except Exception:
                    log.exception("failed to handle an audio frame")
                    self.reject(
                        ProtocolViolation(ErrorCode.INTERNAL_ERROR, "could not handle audio")
                    )
            return
        try:
            message = parse_client_message(self.codec.decode(frame))
        except ProtocolViolation as violation:
            self.reject(violation)
            return
        try:
            await self._dispatch(message)
        except Exception:
            log.exception("failed to handle %s", message.type)
            self.reject(
                ProtocolViolation(
                    ErrorCode.INTERNAL_ERROR, f"could not handle {message.type}", message.id
                )
            )

    async def _dispatch(self, message: ClientMessage) -> None:
        if isinstance(message, Ping):
            pong = connection_message(PONG)
            if message.id is not None:
                pong["request_id"] = message.id
            self.send_control(pong)
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
            # Everything else is the session's: the runtime takes it without waiting.
            self.runtime.handle(message)

    def reject(self, violation: ProtocolViolation) -> None:
        """Answer a bad message in-band; sequenced once a session exists."""
        runtime = self.runtime
        if runtime is not None:
            runtime.reject(violation)
        else:
            fields = error_fields(
                violation.code.value, violation.message, violation.request_id, violation.details
            )
            self.send_control(connection_message("error", **fields))

    # -- writing ---------------------------------------------------------

    async def _write_loop(self) -> None:
        try:
            await self._write()
        except ConnectionClosed:
            return
        except Exception as exc:
            # Never die silently: a writer that stops leaves the client waiting forever.
            log.error("connection writer failed: %s", describe_failure(exc))
            self.close(CloseCode.INTERNAL_ERROR, "internal error: resume")

    async def _send(self, frame: tuple[bytes, bool]) -> None:
        data, text = frame
        await self.ws.send(data, text=text)

    def _encode_control(self, message: dict[str, Any]) -> tuple[bytes, bool]:
        try:
            return _as_payload(self.codec.encode(message))
        except Exception as exc:
            raise EventNotEncodable(f"{message.get('type')} could not be encoded: {exc}") from exc

    def _encode_event(self, event: Event) -> tuple[bytes, bool]:
        """The event's frame; an event that cannot be encoded is voided first.

        It is numbered and in the replay buffer already: left as it is, every
        resume would fail on it again. It becomes an ``internal_error`` event of
        the same ``seq``, so the stream stays gap-free and a resume goes on.
        """
        try:
            return _as_payload(self.codec.encode_event(event))
        except Exception as exc:
            void_event(event)
            raise EventNotEncodable(f"event {event.seq} could not be encoded: {exc}") from exc

    def _check_acks(self, event: Event, runtime: SessionEndpoint) -> None:
        """Close a client that stopped acking while output streams (``--ack-timeout``, on)."""
        settings = self.server.settings
        acked = runtime.acked_seq
        now = asyncio.get_running_loop().time()
        mark = self._ack_mark
        if mark is None or mark[0] <= acked:
            self._ack_mark = mark = (event.seq, now)
        if event.seq - acked > settings.ack_window and now - mark[1] > settings.ack_timeout:
            self.close_slow_consumer(f"slow consumer: no ack after seq {acked}; resume")

    def _next_frame(self) -> tuple[bytes, bool] | None:
        """The next frame to write (``None``: nothing is ready), for both send paths:
        connection messages, then the replay, then the runtime's outbox, whose events
        are settled and ack-checked here, before the caller writes the frame. Once per
        frame on the fast path: no allocation, no call but the encoder's (acks off)."""
        control = self._control
        if control:
            return self._encode_control(control.pop(0))
        replay = self._replay
        if replay:
            return self._encode_event(replay.popleft())
        self._replay = None
        runtime = self.runtime
        if runtime is None or self._closing:
            return None
        event = runtime.next_event()
        if event is None:
            return None
        frame = self._encode_event(event)
        if event.type == "response.done":
            runtime.settle()
        if self.server.settings.ack_timeout:
            self._check_acks(event, runtime)
        return frame

    async def _write(self) -> None:
        send = self._send
        next_frame = self._next_frame
        while True:
            self._wake_pending = False
            while (frame := next_frame()) is not None:
                await send(frame)
            if self._wake_pending:
                continue
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None


def _as_payload(frame: str | bytes) -> tuple[bytes, bool]:
    """A frame's bytes and whether it is text. Text is encoded here, once, not inside
    websockets, which would log a traceback and drop the connection without a close code
    on a lone surrogate (here it raises, and the event is voided)."""
    if isinstance(frame, str):
        return frame.encode(), True
    return frame, False


def describe_failure(exc: BaseException) -> str:
    """One line: the exception, and what caused it."""
    text = f"{type(exc).__name__}: {exc}"
    cause = exc.__cause__
    if cause is not None:
        text += f" (from {type(cause).__name__}: {cause})"
    return text.replace("\n", " ")[:500]
