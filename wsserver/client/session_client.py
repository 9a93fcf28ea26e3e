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
import ssl as ssl_module
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

from protocol.client_session import ClientSession
from protocol.encoding import JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL, Codec, codec_for
from wsserver.client import messages
from wsserver.client.auth import Credentials
from wsserver.client.backoff import Backoff
from wsserver.client.delegation import Delegated
from wsserver.client.errors import AuthenticationError, ClientError, SessionClosed
from wsserver.client.handshake import Handshake
from wsserver.client.microphone import Microphone
from wsserver.client.playback import RealtimePlayer
from wsserver.client.reconnect import ConnectionHooks, ReconnectingConnection
from wsserver.client.response_requests import ResponseRequests
from wsserver.client.results import ResponseResult
from wsserver.client.tools import ToolBox, ToolExecutor, ToolHandler, describe_handler
from wsserver.client.voice import VoiceChannel

__all__ = [
    "AuthenticationError",
    "Backoff",
    "ClientError",
    "ResponseResult",
    "SessionClient",
    "SessionClosed",
]


class SessionClient:
    """One session over one (re)connecting WebSocket."""

    # Each kept by the part that reads it, when it reads it: an assignment takes effect.
    state = Delegated[ClientSession]("_connection")
    """Dedup by seq, last seen, resume decisions (the protocol's client session)."""
    codec = Delegated[Codec]("_connection")
    """The encoding of every message sent and received."""
    urls = Delegated[tuple[str, ...]]("_connection")
    """The worker URLs; each reconnect tries the next one."""
    reconnect = Delegated[bool]("_connection")
    """Whether a dropped connection is reconnected (read at each drop)."""
    backoff = Delegated[Backoff]("_connection")
    """The wait between reconnect attempts."""
    ready = Delegated[dict[str, Any]]("_connection")
    """The last ``session.ready`` (empty before the first)."""
    reconnects = Delegated[int]("_connection")
    """Reconnect attempts made so far."""
    close_code = Delegated[int | None]("_connection")
    """The last connection's close code (1006: no closing handshake)."""
    close_codes = Delegated[list[int | None]]("_connection")
    """Every connection's close code, in order (1006: no closing handshake)."""
    sequence_gaps = Delegated[int]("_connection")
    """Connections dropped because an event's seq skipped ahead (a server fault)."""
    subprotocol = Delegated[str]("_handshake")
    """The encoding's subprotocol, offered in every handshake."""
    open_timeout = Delegated[float]("_handshake")
    """Seconds :meth:`open` waits for ``session.ready``; each handshake's bound too."""
    close_timeout = Delegated[float]("_handshake")
    """Seconds :meth:`close` may take, the extra connection between connections included."""
    ssl = Delegated[ssl_module.SSLContext | None]("_handshake")
    """TLS context for wss:// URLs (None: the system's CAs)."""
    microphone = Delegated[Microphone]("_voice")
    """Numbers input audio chunks and keeps the last second for a resend."""
    player = Delegated[RealtimePlayer | None]("_voice")
    """The simulated player (``simulate_playback=True``), else None."""
    sample_rate = Delegated[int]("_voice")
    """The rate of the session's PCM16 audio, both ways."""
    playback_report_interval = Delegated[float]("_voice")
    """Seconds between the simulated player's playback reports."""
    toolbox = Delegated[ToolBox]("_tools")
    """Declared tools and their handlers (``tools=`` or :meth:`register_tool`)."""
    run_tools = Delegated[bool]("_tools")
    """Whether tool calls run their handlers here by themselves."""

    def __init__(
        self,
        url: str | Sequence[str],
        *,
        encoding: Literal["json", "msgpack"] = "json",
        instructions: str | None = None,
        max_output_tokens: int | None = None,
        tool_rounds: Literal["server", "client"] | None = None,
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
        urls: tuple[str, ...] = (url,) if isinstance(url, str) else tuple(url)
        if not urls:
            raise ValueError("at least one url")
        subprotocol = MSGPACK_SUBPROTOCOL if encoding == "msgpack" else JSON_SUBPROTOCOL
        self.instructions = instructions
        self.max_output_tokens = max_output_tokens
        self.tool_rounds = tool_rounds
        self.audio = audio
        self._handshake = Handshake(
            subprotocol,
            Credentials.resolve(api_key, client_token),
            ssl=ssl,
            open_timeout=open_timeout,
            close_timeout=close_timeout,
            resume_token=lambda: self.state.resume_token,
        )
        self._connection = ReconnectingConnection(
            urls,
            self._handshake,
            codec_for(subprotocol),
            ClientSession(ack_every=ack_every),
            reconnect=reconnect,
            backoff=backoff or Backoff(),
        )
        self._voice = VoiceChannel(
            self._connection,
            audio,
            simulate_playback=simulate_playback,
            playback_report_interval=playback_report_interval,
        )
        self._requests = ResponseRequests(self._connection)
        self._tools = ToolExecutor(ToolBox(), self._connection, run_tools=run_tools)
        for name, handler in (tools or {}).items():
            self.toolbox.register(name, handler, **describe_handler(handler))

    # -- lifecycle -------------------------------------------------------

    async def __aenter__(self) -> SessionClient:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def open(self) -> dict[str, Any]:
        """Connect, start the session and wait for ``session.ready``."""
        first_ready = self._connection.start(
            ConnectionHooks(
                start_message=self._start_message,
                before_ready=(self._voice.resend,),
                # Requests and results the server may not have; pending calls never run here.
                after_ready=(self._requests.after_ready, self._tools.after_ready),
                on_event=(self._voice.play, self._tools.on_event, self._requests.on_event),
            )
        )
        self._voice.start_reporting()
        try:
            return await asyncio.wait_for(asyncio.shield(first_ready), self.open_timeout)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """End the session on the server: a normal close, which aborts any running response.

        Between connections (reconnecting) it connects once more, resumes and closes
        normally, within ``close_timeout``, so the server does not keep the session for
        its resume window nor the response generating for its grace period.
        """
        self._voice.stop_reporting()
        await self._connection.close()

    def drop_connection(self) -> None:
        """Cut the TCP connection without a close frame, as a network handoff would."""
        self._connection.drop()

    def __repr__(self) -> str:
        # Never the key, the client token or the resume token.
        return f"SessionClient(url={self.url!r}, session_id={self.session_id!r})"

    # -- what the session is now -------------------------------------------

    @property
    def url(self) -> str:
        """The URL the next connection goes to."""
        return self._connection.url

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
        await self._connection.send(message)

    async def send_text(self, text: str) -> None:
        """Add a user turn without starting a response."""
        await self.send({"type": "input.text", "text": text})

    async def create_response(
        self,
        text: str | None = None,
        *,
        max_output_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
        instructions: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        audio_output: bool | None = None,
    ) -> None:
        """Start a response, adding ``text`` as a user turn first when given.

        ``response_format``: a JSON Schema the answer must match (structured output);
        ``instructions``, ``tools``, ``audio_output``: this response's own.
        """
        message = messages.response_create(text, max_output_tokens, response_format)
        await self._requests.send(message | messages.overrides(instructions, tools, audio_output))

    async def continue_response(
        self, response_id: str, *, max_output_tokens: int | None = None
    ) -> None:
        """Continue an unfinished response (failed, incomplete, interrupted) where it stopped.

        The new response carries ``continues: response_id`` in ``response.created``.
        For a response lost with its worker, first trim what you showed to the
        ``persisted_chars`` of its ``response.done``: the continuation starts there.
        """
        await self._requests.send(messages.response_continue(response_id, max_output_tokens))

    async def interrupt(
        self,
        *,
        rendered_chars: int | None = None,
        played_ms: int | None = None,
        response_id: str | None = None,
    ) -> None:
        """Stop the running response, keeping what was rendered (or played) in the history."""
        await self.send(messages.response_interrupt(rendered_chars, played_ms, response_id))

    async def cancel(self, *, response_id: str | None = None) -> None:
        """Stop the running response and drop it from the history."""
        await self.send(messages.response_cancel(response_id))

    async def ping(self, request_id: str | None = None) -> None:
        """Application-level ping; the server answers ``pong``."""
        await self.send(messages.ping(request_id))

    # -- voice -------------------------------------------------------------

    async def send_audio(self, pcm: bytes, *, last: bool = False) -> None:
        """Send microphone PCM16 (any length; cut into chunks of at most 100 ms).

        Audio shorter than a chunk waits for the next call; ``last`` flushes it
        and flags the final chunk, which commits the turn in manual mode. While
        disconnected, chunks are kept for the resend after the resume (the last
        second) and the rest is dropped.
        """
        await self._voice.send_audio(pcm, last=last)

    async def stream_audio(self, pcm: bytes, *, chunk_ms: int = 20, last: bool = False) -> None:
        """Send PCM16 at real-time pace, ``chunk_ms`` at a time, as a microphone would."""
        await self._voice.stream_audio(pcm, chunk_ms=chunk_ms, last=last)

    async def commit_audio(self) -> None:
        """Make the buffered input audio a user turn (manual turn detection)."""
        await self.send({"type": "input_audio.commit"})

    async def clear_audio(self) -> None:
        """Drop the buffered, uncommitted input audio."""
        await self.send({"type": "input_audio.clear"})

    async def report_playback(self, response_id: str, played_ms: int) -> None:
        """Tell the server how much of a response's audio the user has heard."""
        await self._voice.report_playback(response_id, played_ms)

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

    async def update_session(
        self,
        *,
        instructions: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        audio: dict[str, Any] | None = None,
        tool_rounds: Literal["server", "client"] | None = None,
    ) -> None:
        """``session.update`` of the settings given (docs/PROTOCOL.md: ``session.update``)."""
        message = messages.session_update(instructions, tools, audio, tool_rounds)
        if audio is not None:  # a text session becomes a voice session
            self.audio = audio
            self._voice.set_audio(audio)
        await self.send(message)

    async def send_tool_result(
        self, call_id: str, output: Any = None, *, error: str | None = None
    ) -> None:
        """Answer a ``response.tool_call`` yourself (resent after a reconnect if unseen)."""
        await self._tools.send_result(call_id, output, error=error)

    # -- receiving -------------------------------------------------------

    async def next_event(self, timeout: float | None = None) -> dict[str, Any]:
        """The next event; raises :class:`SessionClosed` when the session ended."""
        return await self._connection.events.next_event(timeout)

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Every event once, in order, until the session ends."""
        async for event in self._connection.events.events():
            yield event

    async def collect_response(self, timeout: float | None = None) -> ResponseResult:
        """Read events until the current response ends (done or truncated)."""
        return await self._connection.events.collect_response(timeout)

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

    # -- what the connection asks of the facade ----------------------------

    def _start_message(self) -> dict[str, Any]:
        return self.state.start_message(
            instructions=self.instructions,
            settings=messages.start_settings(self.max_output_tokens, self.tool_rounds),
            audio=self.audio,
            tools=self.toolbox.declarations(),
        )
