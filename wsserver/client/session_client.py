"""Asyncio client SDK.

>>> async with SessionClient("ws://127.0.0.1:8765") as client:
...     result = await client.ask("hello")
...     print(result.text, result.status)

The client reconnects by itself after a dropped connection (jittered
exponential backoff), resumes from the last seq it saw, and hands the
application each event once, in order. A response that can no longer finish
is reported as a ``response.truncated`` event. :meth:`SessionClient.close` ends the
session on the server, also between connections.

Credentials: ``api_key=`` (an API key or a JWT; ``Authorization: Bearer``) or
``client_token=`` (minted by the app's backend; a ``wsserver.token.<token>``
subprotocol entry), by default from ``WSSERVER_API_KEY`` / ``WSSERVER_CLIENT_TOKEN``.
A refusal (HTTP 401/403) raises :class:`AuthenticationError` and is never retried.

Voice: start with ``audio={...}`` (the ``session.start`` audio settings), send
microphone PCM16 with :meth:`SessionClient.send_audio` or
:meth:`SessionClient.stream_audio`; answers carry ``response.audio.delta``
events (``audio`` holds PCM16). Report playback with
:meth:`SessionClient.report_playback`, or let ``simulate_playback=True`` play
at real-time speed and report by itself. Input chunks the server may not have
got before a drop (the last second) are sent again after the resume; the server
ignores those it already has.

Tools: declare them with ``tools=`` or :meth:`SessionClient.register_tool`
(with a handler, sync or async, it runs each call once and sends the result;
the response then goes on by itself). ``response.tool_call`` events still reach
the application, which may answer with :meth:`SessionClient.send_tool_result`.
Structured output: ``create_response(..., response_format=...)``; partial
objects arrive as ``response.output_json.delta`` events and the final one in
``ResponseResult.output_json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl as ssl_module
import time
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Any, Literal

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from protocol.audio_frame import audio_event_from_frame, is_audio_frame
from protocol.client_session import TRUNCATED, ClientSession, ClientState, SequenceGap
from protocol.codes import CLOSE_CODES, ERROR_CODES, Disposition, close_disposition
from protocol.encoding import JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL, codec_for
from protocol.errors import ProtocolError
from wsserver.client.auth import Credentials, RedactingLogger, retry_after_seconds
from wsserver.client.microphone import Microphone
from wsserver.client.playback import RealtimePlayer
from wsserver.client.results import (
    AuthenticationError,
    Backoff,
    ClientError,
    ResponseResult,
    SessionClosed,
)
from wsserver.client.tools import ToolBox, ToolHandler

_END = object()

__all__ = [
    "AuthenticationError",
    "Backoff",
    "ClientError",
    "ResponseResult",
    "SessionClient",
    "SessionClosed",
]

# Close codes a server uses to refuse credentials: ended as an AuthenticationError.
_AUTH_CLOSE_NAMES = frozenset({"unauthorized", "forbidden"})


class SessionClient:
    """One session over one (re)connecting WebSocket."""

    def __init__(
        self,
        url: str | Sequence[str],
        *,
        encoding: Literal["json", "msgpack"] = "json",
        instructions: str | None = None,
        max_output_tokens: int | None = None,
        reconnect: bool = True,
        backoff: Backoff | None = None,
        ack_every: int = 32,
        open_timeout: float = 10.0,
        audio: dict[str, Any] | None = None,
        simulate_playback: bool = False,
        playback_report_interval: float = 0.1,
        tools: dict[str, ToolHandler] | None = None,
        run_tools: bool = True,
        api_key: str | None = None,
        client_token: str | None = None,
        close_timeout: float = 5.0,
        ssl: ssl_module.SSLContext | None = None,
    ) -> None:
        """Nothing connects until :meth:`open` (or ``async with``).

        ``api_key``: an API key or a JWT, sent as ``Authorization: Bearer``;
        ``client_token``: a short-lived token minted by the app's backend, sent as the
        subprotocol entry ``wsserver.token.<token>`` (for browsers and apps, which
        should not hold an API key). Each defaults to ``WSSERVER_API_KEY`` /
        ``WSSERVER_CLIENT_TOKEN`` from the environment. ``close_timeout`` bounds
        :meth:`close`, including the extra connection it makes between connections.
        """
        self.urls: tuple[str, ...] = (url,) if isinstance(url, str) else tuple(url)
        if not self.urls:
            raise ValueError("at least one url")
        self._url_index = 0
        self.subprotocol = MSGPACK_SUBPROTOCOL if encoding == "msgpack" else JSON_SUBPROTOCOL
        self.codec = codec_for(self.subprotocol)
        self.instructions = instructions
        self.max_output_tokens = max_output_tokens
        self.reconnect = reconnect
        self.backoff = backoff or Backoff()
        self.open_timeout = open_timeout
        self.close_timeout = close_timeout
        self._credentials = Credentials.resolve(api_key, client_token)
        self._logger = RedactingLogger(logging.getLogger("websockets.client"), self._secrets)
        self._not_before: dict[str, float] = {}
        """Per URL: no attempt before this loop time (the server's ``Retry-After``)."""
        self._auth_refusal: str | None = None
        self.state = ClientSession(ack_every=ack_every)
        self.reconnects = 0
        self.close_code: int | None = None
        self.close_codes: list[int | None] = []
        """Every connection's close code, in order (1006: no closing handshake)."""
        self.sequence_gaps = 0
        self._request_count = 0
        self._pending_request: dict[str, Any] | None = None
        """Connections dropped because an event's seq skipped ahead (a server fault)."""
        self.ready: dict[str, Any] = {}
        self._ws: ClientConnection | None = None
        self._open = asyncio.Event()
        self._events: asyncio.Queue[Any] = asyncio.Queue()
        self._runner: asyncio.Task[None] | None = None
        self._closing = False
        self._first_ready: asyncio.Future[dict[str, Any]] | None = None
        self._last_heard = 0.0
        self._open_refused: str | None = None
        self._connection_ready = False
        self.audio = audio
        self.sample_rate = int((audio or {}).get("sample_rate", 16000))
        self.microphone = Microphone(self.sample_rate)
        barge_in = (audio or {}).get("turn_detection", {}).get("interrupt_response", True)
        self.player = (
            RealtimePlayer(self.sample_rate, stop_on_speech=bool(barge_in))
            if simulate_playback
            else None
        )
        self.playback_report_interval = playback_report_interval
        self._reporter: asyncio.Task[None] | None = None
        self.toolbox = ToolBox()
        """Declared tools and their handlers (``tools=`` or :meth:`register_tool`)."""
        for name, handler in (tools or {}).items():
            self.toolbox.register(name, handler, **_describe_handler(handler))
        self.run_tools = run_tools
        self._tool_tasks: set[asyncio.Task[None]] = set()
        self.ssl = ssl
        """TLS context for wss:// URLs (None: the system's CAs)."""

    # -- lifecycle -------------------------------------------------------

    async def __aenter__(self) -> SessionClient:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def open(self) -> dict[str, Any]:
        """Connect, start the session and wait for ``session.ready``."""
        loop = asyncio.get_running_loop()
        self._first_ready = loop.create_future()
        # open() may have given up waiting already; never leave the outcome unread.
        self._first_ready.add_done_callback(lambda f: None if f.cancelled() else f.exception())
        self._runner = asyncio.create_task(self._run(), name="wsserver client")
        if self.player is not None:
            self._reporter = asyncio.create_task(self._report_playback_loop())
        try:
            return await asyncio.wait_for(asyncio.shield(self._first_ready), self.open_timeout)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """End the session on the server: a normal close, which aborts any running response.

        Between connections (reconnecting) it connects once more, resumes and closes
        normally, within ``close_timeout``, so the server does not keep the session for
        its resume window nor the response generating for its grace period.
        """
        self._closing = True
        if self._reporter is not None:
            self._reporter.cancel()
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
            await self._end_on_server(resume)

    def _resume_request(self) -> dict[str, Any]:
        return {
            "type": "session.resume",
            "session_id": self.state.session_id,
            "resume_token": self.state.resume_token,
            "last_seq": self.state.last_seq,
        }

    async def _end_on_server(self, resume: dict[str, Any]) -> None:
        """Resume on a fresh connection only to close it with 1000, which ends the session."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.close_timeout):
                for offset in range(len(self.urls)):
                    url = self.urls[(self._url_index + offset) % len(self.urls)]
                    with contextlib.suppress(OSError, InvalidHandshake, ConnectionClosed):
                        if await self._resume_and_end(url, resume):
                            return

    async def _resume_and_end(self, url: str, resume: dict[str, Any]) -> bool:
        """Whether the server answered (ended the session, or has none to end)."""
        async with connect(self._session_url(url), **self._connect_options(url)) as ws:
            await ws.send(self.codec.encode(resume))
            async for frame in ws:
                if isinstance(frame, bytes) and is_audio_frame(frame):
                    continue
                try:
                    message = self.codec.decode(frame)
                except ProtocolError:
                    continue
                if not isinstance(message, dict):
                    continue
                if message.get("type") == "session.ready":
                    await ws.close(1000, "client closed")
                    return True
                if message.get("type") == "error" and "seq" not in message:
                    # Gone already, or not this worker's to end now (store down).
                    info = ERROR_CODES.get(str(message.get("code")))
                    return info is None or info.disposition is Disposition.TERMINAL
        return False

    def drop_connection(self) -> None:
        """Cut the TCP connection without a close frame, as a network handoff would."""
        ws = self._ws
        if ws is not None:
            ws.transport.abort()

    @property
    def url(self) -> str:
        """The URL the next connection goes to."""
        return self.urls[self._url_index % len(self.urls)]

    def _connect_url(self) -> str:
        """The URL to connect to; a resume names its session, so a router finds its owner."""
        return self._session_url(self.url)

    def _session_url(self, url: str) -> str:
        session_id = self.state.session_id
        if session_id is None:
            return url
        separator = "&" if "?" in url else "?"
        return f"{url}{separator}session_id={session_id}"

    def _connect_options(self, url: str) -> dict[str, Any]:
        """Handshake options of every connection: credentials, TLS, no compression."""
        tls: dict[str, Any] = {"ssl": self.ssl} if url.startswith("wss://") and self.ssl else {}
        return {
            **tls,
            "subprotocols": self._credentials.subprotocols(self.subprotocol),
            "additional_headers": self._credentials.headers(),
            "compression": None,
            "open_timeout": self.open_timeout,
            "close_timeout": self.close_timeout,
            "max_size": None,
            "logger": self._logger,
        }

    def _secrets(self) -> tuple[str, ...]:
        """What the connection's debug log must not show."""
        token = self.state.resume_token
        return (*self._credentials.secrets(), *((token,) if token else ()))

    def __repr__(self) -> str:
        # Never the key, the client token or the resume token.
        return f"SessionClient(url={self.url!r}, session_id={self.session_id!r})"

    @property
    def session_id(self) -> str | None:
        """The session's id once ready."""
        return self.state.session_id

    @property
    def last_seq(self) -> int:
        """The last seq the application was handed."""
        return self.state.last_seq

    # -- sending ---------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        """Send one client message, waiting for a (re)connected session first."""
        while True:
            if self.state.state is ClientState.CLOSED:
                raise self._closed_error()
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

    async def send_text(self, text: str) -> None:
        """Add a user turn without starting a response."""
        await self.send({"type": "input.text", "text": text})

    async def create_response(
        self,
        text: str | None = None,
        *,
        max_output_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> None:
        """Start a response, adding ``text`` as a user turn first when given.

        ``response_format``: a JSON Schema the answer must match (structured output).
        """
        message: dict[str, Any] = {"type": "response.create"}
        if text is not None:
            message["input"] = text
        if max_output_tokens is not None:
            message["max_output_tokens"] = max_output_tokens
        if response_format is not None:
            message["response_format"] = {"type": "json_schema", "schema": response_format}
        await self._send_request(message)

    async def continue_response(
        self, response_id: str, *, max_output_tokens: int | None = None
    ) -> None:
        """Continue an unfinished response (failed, incomplete, interrupted) where it stopped.

        The new response carries ``continues: response_id`` in ``response.created``.
        For a response lost with its worker, first trim what you showed to the
        ``persisted_chars`` of its ``response.done``: the continuation starts there.
        """
        message: dict[str, Any] = {"type": "response.continue", "response_id": response_id}
        if max_output_tokens is not None:
            message["max_output_tokens"] = max_output_tokens
        await self._send_request(message)

    async def _send_request(self, message: dict[str, Any]) -> None:
        """Send a request that starts a response; kept until the server answers it.

        A connection can drop between the send and the server reading it. The
        request carries an id; after the resume it is sent again, and the server
        answers a copy it already had with ``duplicate_request`` (nothing new starts).
        """
        self._request_count += 1
        message.setdefault("id", f"req_{self._request_count}")
        self._pending_request = message
        try:
            await self.send(message)
        except ClientError:
            if self.state.state is ClientState.CLOSED:
                raise
            # Dropped while sending: it goes again after the resume (see above).

    async def interrupt(
        self,
        *,
        rendered_chars: int | None = None,
        played_ms: int | None = None,
        response_id: str | None = None,
    ) -> None:
        """Stop the running response, keeping what was rendered (or played) in the history."""
        message: dict[str, Any] = {"type": "response.interrupt"}
        if rendered_chars is not None:
            message["rendered_chars"] = rendered_chars
        if played_ms is not None:
            message["played_ms"] = played_ms
        if response_id is not None:
            message["response_id"] = response_id
        await self.send(message)

    async def cancel(self, *, response_id: str | None = None) -> None:
        """Stop the running response and drop it from the history."""
        message: dict[str, Any] = {"type": "response.cancel"}
        if response_id is not None:
            message["response_id"] = response_id
        await self.send(message)

    # -- voice -------------------------------------------------------------

    async def send_audio(self, pcm: bytes, *, last: bool = False) -> None:
        """Send microphone PCM16 (any length; cut into chunks of at most 100 ms).

        Audio shorter than a chunk waits for the next call; ``last`` flushes it
        and flags the final chunk, which commits the turn in manual mode. While
        disconnected, chunks are kept for the resend after the resume (the last
        second) and the rest is dropped.
        """
        for frame in self.microphone.frames(pcm, last=last):
            ws = self._ws
            if ws is None or not self._open.is_set():
                continue
            with contextlib.suppress(ConnectionClosed):
                # A drop mid-send: the chunk is resent after the resume.
                await ws.send(frame)

    async def stream_audio(self, pcm: bytes, *, chunk_ms: int = 20, last: bool = False) -> None:
        """Send PCM16 at real-time pace, ``chunk_ms`` at a time, as a microphone would."""
        step = self.sample_rate * 2 * chunk_ms // 1000
        loop = asyncio.get_running_loop()
        start = loop.time()
        for index, offset in enumerate(range(0, len(pcm), step)):
            # A microphone delivers a chunk once it is recorded, at the end of its
            # interval; paced from the start time, so scheduling delays do not add up.
            delay = start + (index + 1) * chunk_ms / 1000 - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            final = last and offset + step >= len(pcm)
            await self.send_audio(pcm[offset : offset + step], last=final)

    async def commit_audio(self) -> None:
        """Make the buffered input audio a user turn (manual turn detection)."""
        await self.send({"type": "input_audio.commit"})

    async def clear_audio(self) -> None:
        """Drop the buffered, uncommitted input audio."""
        await self.send({"type": "input_audio.clear"})

    async def report_playback(self, response_id: str, played_ms: int) -> None:
        """Tell the server how much of a response's audio the user has heard."""
        await self.send(
            {"type": "output_audio.played", "response_id": response_id, "played_ms": played_ms}
        )

    async def _report_playback_loop(self) -> None:
        player = self.player
        assert player is not None
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.playback_report_interval)
            due = player.due_report(loop.time())
            if due is not None and self._open.is_set():
                with contextlib.suppress(ClientError):
                    await self.report_playback(*due)

    def _play(self, event: dict[str, Any]) -> None:
        """Feed the simulated player; a barge-in stops it and reports where."""
        if self.player is None:
            return
        stopped = self.player.on_event(event, asyncio.get_running_loop().time())
        if stopped is not None:
            self._spawn_report(*stopped)

    def _spawn_report(self, response_id: str, played_ms: int) -> None:
        async def report() -> None:
            with contextlib.suppress(ClientError):
                await self.report_playback(response_id, played_ms)

        task = asyncio.get_running_loop().create_task(report())
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    # -- tools ---------------------------------------------------------------

    async def register_tool(
        self,
        name: str,
        handler: ToolHandler | None = None,
        *,
        description: str = "",
        parameters: dict[str, Any] | None = None,
    ) -> None:
        """Declare a tool (JSON Schema ``parameters``); on an open session, update it."""
        self.toolbox.register(name, handler, description=description, parameters=parameters)
        if self.state.session_id is not None:
            await self.send({"type": "session.update", "tools": self.toolbox.declarations()})

    async def send_tool_result(
        self, call_id: str, output: Any = None, *, error: str | None = None
    ) -> None:
        """Answer a ``response.tool_call`` yourself (resent after a reconnect if unseen)."""
        message: dict[str, Any] = {
            "type": "tool.result",
            "call_id": call_id,
            "output": output,
            "id": call_id,
        }
        if error is not None:
            message["error"] = error
        self.toolbox.unacknowledged[call_id] = message
        await self.send(message)

    def _on_request_answer(self, event: dict[str, Any]) -> None:
        """The pending response request got its answer (started, or refused)."""
        pending = self._pending_request
        if pending is not None and event.get("request_id") == pending["id"]:
            self._pending_request = None

    def _on_tool_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "response.tool_call" and self.run_tools and self.toolbox.claim(event):
            self._spawn_tool(event)
        elif kind == "tool.result.accepted":
            self.toolbox.acknowledged(event["call_id"])
        elif kind == "error" and event.get("code") in ("tool_call_closed", "unknown_tool_call"):
            # Refused for good: sending it again after a reconnect would change nothing.
            self.toolbox.acknowledged(str(event.get("request_id")))

    def _spawn_tool(self, call: dict[str, Any]) -> None:
        async def run() -> None:
            message = await self.toolbox.run(call)
            with contextlib.suppress(ClientError):
                await self.send(message)

        task = asyncio.get_running_loop().create_task(run())
        self._tool_tasks.add(task)
        task.add_done_callback(self._tool_tasks.discard)

    async def _after_ready(self, ws: ClientConnection, ready: dict[str, Any]) -> None:
        """Requests and results the server may not have; pending calls never run here."""
        if self._pending_request is not None and ready.get("resumed"):
            await ws.send(self.codec.encode(self._pending_request))
        for message in list(self.toolbox.unacknowledged.values()):
            await ws.send(self.codec.encode(message))
        for call in ready.get("pending_tool_calls", []):
            unsent = call["call_id"] not in self.toolbox.unacknowledged
            if unsent and self.run_tools and self.toolbox.claim(call):
                self._spawn_tool(call)

    async def ping(self, request_id: str | None = None) -> None:
        """Application-level ping; the server answers ``pong``."""
        message: dict[str, Any] = {"type": "ping"}
        if request_id is not None:
            message["id"] = request_id
        await self.send(message)

    # -- receiving -------------------------------------------------------

    async def next_event(self, timeout: float | None = None) -> dict[str, Any]:
        """The next event; raises :class:`SessionClosed` when the session ended."""
        item = await asyncio.wait_for(self._events.get(), timeout)
        if item is _END:
            self._events.put_nowait(_END)
            raise self._closed_error()
        event: dict[str, Any] = item
        return event

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Every event once, in order, until the session ends."""
        while True:
            try:
                yield await self.next_event()
            except SessionClosed:
                return

    async def collect_response(self, timeout: float | None = None) -> ResponseResult:
        """Read events until the current response ends (done or truncated)."""
        result = ResponseResult("", "", "")
        parts: list[str] = []
        audio: list[bytes] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            event = await self.next_event(remaining)
            kind = event.get("type")
            if kind == "response.created":
                result.response_id = event["response_id"]
            elif kind == "response.text.delta":
                parts.append(event["delta"])
            elif kind == "response.audio.delta":
                audio.append(event["audio"])
                continue
            elif kind == "response.tool_call":
                result.tool_calls.append(event)
            elif kind == "response.output_json.done":
                result.output_json = event["value"]
            elif kind in ("response.done", TRUNCATED):
                result.events.append(event)
                result.response_id = event.get("response_id", result.response_id)
                result.status = event.get("status", "truncated")
                result.reason = event.get("reason")
                result.usage = event.get("usage", {})
                result.text = "".join(parts)
                result.audio = b"".join(audio)
                return result
            result.events.append(event)

    async def ask(
        self,
        text: str,
        *,
        max_output_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ResponseResult:
        """Send a user turn, start a response and wait for it to end (tools run meanwhile)."""
        await self.create_response(
            text, max_output_tokens=max_output_tokens, response_format=response_format
        )
        return await self.collect_response()

    # -- connection loop -------------------------------------------------

    async def _run(self) -> None:
        attempt = 0
        try:
            while True:
                resumed = await self._connect_once()
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

    async def _connect_once(self) -> bool:
        """One connection's life; returns whether it got to ``session.ready``."""
        # Set by the read loop, not returned by it: an abnormal close leaves the loop
        # with an exception, and a connection that reached session.ready must still
        # reset the attempt counter (or a session dies on its Nth drop).
        self._connection_ready = False
        try:
            url = self._connect_url()
            async with connect(url, **self._connect_options(url)) as ws:
                self._ws = ws
                first = (
                    self.state.resume_message()
                    if self.state.session_id is not None
                    else self.state.start_message(
                        instructions=self.instructions,
                        settings=(
                            {"max_output_tokens": self.max_output_tokens}
                            if self.max_output_tokens
                            else None
                        ),
                        audio=self.audio,
                        tools=self.toolbox.declarations(),
                    )
                )
                await ws.send(self.codec.encode(first))
                watchdog = asyncio.create_task(self._watch(ws))
                try:
                    await self._read(ws)
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
            self._on_refused_handshake(exc)
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            if isinstance(exc, InvalidURI):
                raise
        finally:
            self._open.clear()
            ws_done = self._ws
            self._ws = None
        got_ready = self._connection_ready
        code = _close_code(ws_done)
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

    async def _read(self, ws: ClientConnection) -> None:
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
                    await self._resend_audio(ws, event)
                    self._on_ready(event)
                    await self._after_ready(ws, event)
                elif event.get("type") == "error" and self._refused(event):
                    # session.start or session.resume was refused for now (store down):
                    # this connection carries no session; retry with backoff.
                    self._open_refused = str(event.get("code"))
                    await ws.close(1000, "refused")
                    return
                self._play(event)
                self._on_tool_event(event)
                if event.get("type") in ("response.created", "error"):
                    self._on_request_answer(event)
                self._events.put_nowait(event)
            if self.state.state is ClientState.CLOSED:
                # Resume was refused: the session cannot go on.
                await ws.close(1000, "resume refused")
                self._finish("resume_failed", already_truncated=True)
                return
            ack = self.state.ack_message()
            if ack is not None:
                await ws.send(self.codec.encode(ack))

    def _on_refused_handshake(self, exc: InvalidStatus) -> None:
        """HTTP refusal of the upgrade: credentials (terminal) or busy (retry later)."""
        status = exc.response.status_code
        if status in (401, 403):
            # Retrying the same credentials cannot help; the message shows no secret.
            self._auth_refusal = f"handshake refused: http {status}"
        elif status in (429, 503):
            wait = retry_after_seconds(exc.response.headers.get("Retry-After"))
            if wait is not None:
                self._not_before[self.url] = asyncio.get_running_loop().time() + wait

    def _closed_error(self) -> SessionClosed:
        if self._auth_refusal is not None:
            return AuthenticationError(self._auth_refusal)
        return SessionClosed(f"session closed (code {self.close_code})")

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

    async def _resend_audio(self, ws: ClientConnection, ready: dict[str, Any]) -> None:
        """After a resume, send the kept input chunks the server does not have."""
        have = ready.get("audio_in_seq")
        if not isinstance(have, int):
            return
        while frames := self.microphone.resend_after(have):
            for frame in frames:
                await ws.send(frame)
            # Chunks recorded during those sends are sent in the next round.
            have = self.microphone.next_seq - 1

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
                self._events.put_nowait(event)
        self.state.state = ClientState.CLOSED
        self._events.put_nowait(_END)
        if self._first_ready is not None and not self._first_ready.done():
            error = AuthenticationError if self._auth_refusal is not None else SessionClosed
            self._first_ready.set_exception(error(reason))


def _close_code(ws: ClientConnection | None) -> int | None:
    if ws is None:
        return None
    with contextlib.suppress(AttributeError):
        rcvd = ws.protocol.close_rcvd
        if rcvd is not None:
            return int(rcvd.code)
    return 1006


def _describe_handler(handler: ToolHandler) -> dict[str, Any]:
    """A tool's description and parameters from its handler's attributes, if it has them."""
    return {
        "description": getattr(handler, "description", None) or (handler.__doc__ or "").strip(),
        "parameters": getattr(handler, "parameters", None),
    }
