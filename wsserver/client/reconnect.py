"""One session's connections: connect, read, watch for silence, reconnect with backoff.

A connection opens with ``session.start`` (or ``session.resume`` once the session has
an id) and lives until it drops. Then the client waits a jittered backoff (never less
than the server's ``Retry-After``), tries the next URL and resumes from the last seq it
saw. It gives up, ending the event stream with ``response.truncated`` for every open
response, when the server's answer is terminal (a close code, a refused resume, refused
credentials) or the attempts run out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from protocol.audio_frame import audio_event_from_frame, is_audio_frame
from protocol.client_session import ClientSession, ClientState, SequenceGap
from protocol.codes import CLOSE_CODES, ERROR_CODES, Disposition, close_disposition
from protocol.encoding import Codec
from protocol.errors import ProtocolError
from wsserver.client.backoff import Backoff
from wsserver.client.ending import end_on_server
from wsserver.client.errors import AuthenticationError, ClientError, SessionClosed
from wsserver.client.event_stream import EventStream
from wsserver.client.handshake import Handshake, close_code_of, refusal, session_url

# Close codes a server uses to refuse credentials: ended as an AuthenticationError.
_AUTH_CLOSE_NAMES = frozenset({"unauthorized", "forbidden"})


ReadyHook = Callable[[ClientConnection, dict[str, Any]], Awaitable[None]]
"""Called with the connection and its ``session.ready``; may send on it."""


@dataclass(frozen=True, slots=True)
class ConnectionHooks:
    """What the client's other parts do at fixed points of every connection, in order."""

    start_message: Callable[[], dict[str, Any]]
    """The ``session.start`` of a session that has no id yet."""
    before_ready: Sequence[ReadyHook]
    """On ``session.ready``, before anything new may go out (input audio the server lacks)."""
    after_ready: Sequence[ReadyHook]
    """On ``session.ready``, once sends may go (requests and tool results it may lack)."""
    on_event: Sequence[Callable[[dict[str, Any]], None]]
    """Every event, before the application gets it."""


class ReconnectingConnection:
    """The connections of one session, one at a time, and the events they bring."""

    def __init__(
        self,
        urls: Sequence[str],
        handshake: Handshake,
        codec: Codec,
        state: ClientSession,
        *,
        reconnect: bool,
        backoff: Backoff,
    ) -> None:
        """Nothing connects until :meth:`start`."""
        self.urls = tuple(urls)
        self.handshake = handshake
        self.codec = codec
        self.state = state
        self.reconnect = reconnect
        self.backoff = backoff
        self.events = EventStream(self.closed_error)
        self.reconnects = 0
        self.close_code: int | None = None
        self.close_codes: list[int | None] = []
        """Every connection's close code, in order (1006: no closing handshake)."""
        self.sequence_gaps = 0
        """Connections dropped because an event's seq skipped ahead (a server fault)."""
        self.ready: dict[str, Any] = {}
        """The last ``session.ready``."""
        self._url_index = 0
        self._not_before: dict[str, float] = {}
        """Per URL: no attempt before this loop time (the server's ``Retry-After``)."""
        self._auth_refusal: str | None = None
        self._ws: ClientConnection | None = None
        self._open = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._closing = False
        self._first_ready: asyncio.Future[dict[str, Any]] | None = None
        self._last_heard = 0.0
        self._open_refused: str | None = None
        self._connection_ready = False

    @property
    def url(self) -> str:
        """The URL the next connection goes to."""
        return self.urls[self._url_index % len(self.urls)]

    @property
    def connected(self) -> bool:
        """Whether a connection carries the session now (its ``session.ready`` came)."""
        return self._open.is_set()

    def start(self, hooks: ConnectionHooks) -> asyncio.Future[dict[str, Any]]:
        """Start connecting; the future gets the first ``session.ready`` (or why not)."""
        self._first_ready = asyncio.get_running_loop().create_future()
        # The opener may have given up waiting already; never leave the outcome unread.
        self._first_ready.add_done_callback(lambda f: None if f.cancelled() else f.exception())
        self._runner = asyncio.create_task(self._run(hooks), name="wsserver client")
        return self._first_ready

    async def close(self) -> None:
        """End the session on the server: a normal close, also between connections."""
        self._closing = True
        ws = self._ws
        ended = False
        if ws is not None and self._open.is_set():
            await ws.close(1000, "client closed")
            # A socket that died unnoticed takes the close frame nowhere.
            ended = ws.protocol.close_rcvd is not None
        resumable = (
            not ended
            and self.state.state is not ClientState.CLOSED
            and self.state.session_id is not None
            and self.state.resume_token is not None
        )
        resume = self._resume_request() if resumable else None
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
            self._runner = None
        if resume is not None:
            await end_on_server(self.urls, self._url_index, self.handshake, self.codec, resume)

    def _resume_request(self) -> dict[str, Any]:
        # Not state.resume_message(): that would mark the session as resuming here.
        return {
            "type": "session.resume",
            "session_id": self.state.session_id,
            "resume_token": self.state.resume_token,
            "last_seq": self.state.last_seq,
        }

    def drop(self) -> None:
        """Cut the TCP connection without a close frame, as a network handoff would."""
        ws = self._ws
        if ws is not None:
            ws.transport.abort()

    async def send(self, message: dict[str, Any]) -> None:
        """Send one client message, waiting for a (re)connected session first."""
        while True:
            if self.state.state is ClientState.CLOSED:
                raise self.closed_error()
            await self._open.wait()
            ws = self._ws
            if ws is None:
                continue
            try:
                await ws.send(self.codec.encode(message))
                return
            except ConnectionClosed:
                # Not resent: the server may have applied it. The caller decides.
                raise ClientError("connection dropped while sending") from None

    async def send_if_connected(self, frame: bytes) -> None:
        """Send a frame on the current connection; nothing while there is none."""
        ws = self._ws
        if ws is None or not self._open.is_set():
            return
        with contextlib.suppress(ConnectionClosed):
            await ws.send(frame)

    def closed_error(self) -> SessionClosed:
        """The error of every call after the session ended."""
        if self._auth_refusal is not None:
            return AuthenticationError(self._auth_refusal)
        return SessionClosed(f"session closed (code {self.close_code})")

    # -- the loop ----------------------------------------------------------

    async def _run(self, hooks: ConnectionHooks) -> None:
        attempt = 0
        try:
            while True:
                resumed = await self._connect_once(hooks)
                if resumed:
                    attempt = 0
                if self.state.state is ClientState.CLOSED or self._closing:
                    break
                if not self.reconnect or attempt >= self.backoff.max_attempts:
                    self._finish("reconnect_exhausted")
                    break
                # With several workers listed, each reconnect tries the next one.
                self._url_index += 1
                loop = asyncio.get_running_loop()
                wait = self._not_before.get(self.url, 0.0) - loop.time()
                await asyncio.sleep(max(self.backoff.delay(attempt), wait))
                attempt += 1
                self.reconnects += 1
        finally:
            self._open.clear()
            if self.state.state is not ClientState.CLOSED:
                self._finish("client_closed")

    async def _connect_once(self, hooks: ConnectionHooks) -> bool:
        """One connection's life; returns whether it got to ``session.ready``."""
        # Set by the read loop, not returned by it: an abnormal close leaves the loop
        # with an exception, and a connection that reached session.ready must still
        # reset the attempt counter (or a session dies on its Nth drop).
        self._connection_ready = False
        try:
            url = session_url(self.url, self.state.session_id)
            async with connect(url, **self.handshake.options(url)) as ws:
                self._ws = ws
                first = (
                    self.state.resume_message()
                    if self.state.session_id is not None
                    else hooks.start_message()
                )
                await ws.send(self.codec.encode(first))
                watchdog = asyncio.create_task(self._watch(ws))
                try:
                    await self._read(ws, hooks)
                finally:
                    watchdog.cancel()
        except ConnectionClosed:
            pass
        except (ProtocolError, SequenceGap):
            # A frame we cannot use: drop this connection and resume from last_seq,
            # which replays exactly what is missing.
            self.sequence_gaps += 1
            if self._ws is not None:
                self._ws.transport.abort()
        except InvalidStatus as exc:
            refused = refusal(exc)
            if refused.credentials_refused is not None:
                # Retrying the same credentials cannot help.
                self._auth_refusal = refused.credentials_refused
            elif refused.retry_after is not None:
                loop = asyncio.get_running_loop()
                self._not_before[self.url] = loop.time() + refused.retry_after
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            if isinstance(exc, InvalidURI):
                raise
        finally:
            self._open.clear()
            ws_done = self._ws
            self._ws = None
        return self._after_connection(close_code_of(ws_done))

    def _after_connection(self, code: int | None) -> bool:
        """Record how a connection ended, end the session if that was terminal.

        Returns whether the connection got to ``session.ready``.
        """
        got_ready = self._connection_ready
        self.close_code = code
        self.close_codes.append(code)
        if self._closing or self.state.state is ClientState.CLOSED:
            return got_ready
        if self._auth_refusal is not None:
            self._finish(self._auth_refusal)
            return False
        close_info = CLOSE_CODES.get(code) if code is not None else None
        if close_info is not None and close_info.name in _AUTH_CLOSE_NAMES:
            self._auth_refusal = f"closed with {code} ({close_info.name})"
            self._finish(self._auth_refusal)
            return False
        refused, self._open_refused = self._open_refused, None
        if refused is not None:
            info = ERROR_CODES.get(refused)
            if info is None or info.disposition is Disposition.TERMINAL:
                self._finish(f"session.start refused: {refused}")
            return False
        if self.state.session_id is None and not got_ready:
            if code is not None and close_disposition(code) is Disposition.TERMINAL:
                self._finish(f"closed with {code}")
            # Otherwise connect failures are retried like drops.
            return False
        if self.state.connection_lost(code) is Disposition.TERMINAL:
            self._finish(f"closed with {code}")
        return got_ready

    async def _read(self, ws: ClientConnection, hooks: ConnectionHooks) -> None:
        loop = asyncio.get_running_loop()
        async for frame in ws:
            self._last_heard = loop.time()
            if isinstance(frame, bytes) and is_audio_frame(frame):
                message = audio_event_from_frame(frame)
            else:
                message = self.codec.decode(frame)
            if not isinstance(message, dict):
                continue
            for event in self.state.receive(message):
                if event.get("type") == "session.ready":
                    self._connection_ready = True
                    # Resent before new chunks may go out, or those would overtake it.
                    for before in hooks.before_ready:
                        await before(ws, event)
                    self._on_ready(event)
                    for after in hooks.after_ready:
                        await after(ws, event)
                elif event.get("type") == "error" and self._refused(event):
                    # session.start or session.resume was refused for now (store down):
                    # this connection carries no session; retry with backoff.
                    self._open_refused = str(event.get("code"))
                    await ws.close(1000, "refused")
                    return
                for hook in hooks.on_event:
                    hook(event)
                self.events.put(event)
            if self.state.state is ClientState.CLOSED:
                # Resume was refused: the session cannot go on.
                await ws.close(1000, "resume refused")
                self._finish("resume_failed", already_truncated=True)
                return
            ack = self.state.ack_message()
            if ack is not None:
                await ws.send(self.codec.encode(ack))

    def _refused(self, event: dict[str, Any]) -> bool:
        """An unsequenced error answering our session.start, or a retryable resume refusal."""
        if "seq" in event:
            return False
        if self.state.state is ClientState.OPENING:
            return True
        info = ERROR_CODES.get(str(event.get("code")))
        return (
            self.state.state is ClientState.RESUMING
            and info is not None
            and info.disposition is Disposition.RESUME
        )

    async def _watch(self, ws: ClientConnection) -> None:
        """Drop a connection that went silent: no heartbeat in two intervals."""
        loop = asyncio.get_running_loop()
        self._last_heard = loop.time()
        while True:
            interval = self.ready.get("heartbeat_interval_ms", 15_000) / 1000
            allowed = 2 * interval + 1.0
            # Re-read each round: the interval is only known after session.ready.
            await asyncio.sleep(min(allowed / 4, 1.0))
            if loop.time() - self._last_heard > allowed:
                # Half-open: the server may never tell us. Reconnect and resume.
                ws.transport.abort()
                return

    def _on_ready(self, event: dict[str, Any]) -> None:
        self.ready = event
        self._open.set()
        if self._first_ready is not None and not self._first_ready.done():
            self._first_ready.set_result(event)

    def _finish(self, reason: str, *, already_truncated: bool = False) -> None:
        if not already_truncated:
            for event in self.state.give_up(reason):
                self.events.put(event)
        self.state.state = ClientState.CLOSED
        self.events.end()
        if self._first_ready is not None and not self._first_ready.done():
            error = AuthenticationError if self._auth_refusal is not None else SessionClosed
            self._first_ready.set_exception(error(reason))
