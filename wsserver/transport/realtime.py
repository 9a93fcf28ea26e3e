"""The ``/v1/realtime`` endpoint: a WebSocket connection speaking the OpenAI Realtime schema.

It is the native :class:`~wsserver.transport.websocket.Connection` (same reader and
writer tasks, rate limits, session runtime, replay) with the translation of
:mod:`protocol.dialects.realtime` at both edges: each Realtime client event becomes
native messages and input audio, each numbered native event becomes the Realtime
events it translates to. A Realtime client expects a session at once, so one is
opened when the connection is (voice, PCM16 at 24 kHz, server VAD) — or, when the
handshake carries the resume headers, the named session is resumed: the native
resume checks (principal, token, replay), then the translation is rebuilt from the
last quiet point (:mod:`protocol.dialects.realtime.resume`) and only the events
after the client's last ``event_id`` are sent.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from protocol.audio_frame import AudioFrame, AudioKind
from protocol.codes import CloseCode, ErrorCode
from protocol.dialects.realtime.client_events import InputAudio, translate_client_event
from protocol.dialects.realtime.errors import INVALID_REQUEST, SERVER_ERROR, error_event
from protocol.dialects.realtime.event_ids import EventPosition, parse_event_id
from protocol.dialects.realtime.resume import (
    LAST_EVENT_HEADER,
    SESSION_HEADER,
    TOKEN_HEADER,
    ResumeRequest,
    ResumeRequestInvalid,
    check_replay,
    resume_request,
)
from protocol.dialects.realtime.server_events import (
    conversation_created,
    rate_limits_updated,
    session_created,
    translate_event,
)
from protocol.dialects.realtime.session_config import (
    SAMPLE_RATE,
    SessionConfig,
    with_native_settings,
)
from protocol.dialects.realtime.state import DialectState
from protocol.errors import ProtocolViolation, ResumeRefused
from protocol.events import Event
from protocol.messages import Ack, AudioSettings, SessionResume, SessionSettings, SessionStart
from protocol.session import ServerSession
from protocol.session.inputs import Departure
from wsserver.frontdoor.principal_limits import message_allowance
from wsserver.transport.base import ConnectionHost, SessionEndpoint
from wsserver.transport.realtime_configs import KEPT_CONFIGS
from wsserver.transport.websocket import MAX_QUEUED_CONTROL, Connection, describe_failure

log = logging.getLogger(__name__)

REALTIME_PATH = "/v1/realtime"
DEFAULT_MODEL = "wsserver"

CHUNK_BYTES = SAMPLE_RATE * 2 // 10
"""100 ms of PCM16: the native input audio takes chunks of 10-100 ms."""
MIN_CHUNK_BYTES = SAMPLE_RATE * 2 // 100
"""10 ms: a shorter tail waits for the next append."""

_NOTHING = (b"", True)
"""What :meth:`RealtimeConnection._encode_event` gives for an event with no Realtime
counterpart (or one the client has seen): no frame, and the writer goes on."""

RETRYABLE_REFUSALS = frozenset({"store_unavailable"})
"""Refused resumes worth retrying: closed 1013 (the SDK reconnects); others 1008."""


class RealtimeConnection(Connection):
    """A Realtime client's connection over the native session runtime."""

    __slots__ = (
        "_audio_rest",
        "_audio_seq",
        "_quiet_seqs",
        "_resume",
        "_resume_vetted",
        "_skip_to",
        "dialect",
        "model",
    )

    def __init__(self, ws: ServerConnection, server: ConnectionHost, model: str) -> None:
        super().__init__(ws, server)
        self.model = model
        self.dialect: DialectState | None = None
        self._audio_seq = 0
        self._audio_rest = b""
        self._resume: ResumeRequest | None = None
        self._resume_vetted = False
        """The resume passed :meth:`vet_resume` (its replay need not be checked again)."""
        self._skip_to: EventPosition | None = None
        """Replayed events up to this one are the client's already: translated, not sent."""
        self._quiet_seqs: tuple[int | None, int | None] = (None, None)
        """The two newest sent seqs after which nothing was in progress, older first
        (acked natively once they are no rebuild's start: see :meth:`_quiet`)."""

    async def run(self) -> None:
        """Open or resume the session (Realtime clients send nothing first), then serve."""
        try:
            self._resume = self._resume_request()
        except ResumeRequestInvalid as invalid:
            self._refuse_resume(invalid.code, invalid.message)
        else:
            if self._resume is None:
                # Realtime's tool loop: a response that calls tools ends, the client
                # sends the outputs and asks for the next response itself.
                start = SessionStart(
                    type="session.start",
                    audio=AudioSettings(sample_rate=SAMPLE_RATE),
                    settings=SessionSettings(tool_rounds="client"),
                )
                await self.server.open_session(self, start)
            else:
                request = self._resume
                resume = SessionResume(
                    type="session.resume",
                    session_id=request.session_id,
                    resume_token=request.resume_token,
                    last_seq=request.last_seq,
                )
                try:
                    await self.server.resume_session(self, resume)
                except Exception as exc:
                    # One line, no traceback: the client is told (1011) and may retry.
                    log.error("realtime resume failed: %s", describe_failure(exc))
                    self.close(CloseCode.INTERNAL_ERROR, "internal error: resume")
        await super().run()

    def _resume_request(self) -> ResumeRequest | None:
        request = self.ws.request
        if request is None:
            return None
        headers: dict[str, str] = {}
        for name in (SESSION_HEADER, TOKEN_HEADER, LAST_EVENT_HEADER):
            values = request.headers.get_all(name)
            if len(values) > 1:
                raise ResumeRequestInvalid("invalid_resume_request", f"{name} given twice")
            if values:
                headers[name] = values[0]
        return resume_request(headers, request.path.partition("?")[2])

    def _refuse_resume(self, code: str, text: str) -> None:
        """Refuse a resume the dialect itself turned down, and count it (the native
        refusals it passes on are counted where the native session refused them)."""
        self.server.metrics.resume_refused(code)
        self._refuse(code, text)

    def _refuse(self, code: str, text: str) -> None:
        """A resume that cannot be served: an ``error`` with the code, then a close.

        Never a fresh session in its place: the client learns its session is gone.
        """
        close_code = (
            CloseCode.TRY_AGAIN_LATER if code in RETRYABLE_REFUSALS else CloseCode.POLICY_VIOLATION
        )
        # Sent here, not queued: the close must follow the error, not overtake it.
        self.server.spawn(self._send_refusal(self._error(code, text), close_code, code))

    async def _send_refusal(self, error: dict[str, Any], close_code: CloseCode, code: str) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self._send(self._encode_control(error))
        self.close(close_code, f"resume refused: {code}")

    def keep_config(self) -> None:
        """Remember the client's settings for a resume of this session."""
        if self.dialect is not None:
            KEPT_CONFIGS.keep(self.dialect.config)

    # -- native connection messages → Realtime --------------------------

    def send_control(self, message: dict[str, Any]) -> None:
        """Translate a native connection message; heartbeats and pongs have no counterpart."""
        kind = message.get("type")
        if kind == "session.ready" and self.dialect is None:
            session_id = str(message["session_id"])
            config = SessionConfig(session_id, self.model)
            if message.get("resumed") and self.runtime is not None:
                config = self._resumed_config(self.runtime.session)
            self.dialect = DialectState(config)
            if self.runtime is not None:
                self.dialect.max_input_chars = self.runtime.session.limits.max_input_chars
            if message.get("resumed"):
                self.dialect.connection_tag = secrets.token_hex(4)
            if not message.get("resumed"):
                # A resumed connection gets only what it missed: the app goes on unchanged.
                token = str(message.get("resume_token", ""))
                super().send_control(session_created(self.dialect, token))
                super().send_control(conversation_created(self.dialect))
        elif kind == "error":
            code, text = message.get("code"), str(message.get("message"))
            if self._resume is not None and self.runtime is None:
                self._refuse(str(code), text)
            else:
                super().send_control(self._error(code, text))

    def _resumed_config(self, session: ServerSession) -> SessionConfig:
        """The settings of a resumed session: what the native session holds in force
        (on any worker), and what only the dialect knows where this worker kept it."""
        native = {
            "instructions": session.conversation.instructions or "",
            "tools": list(session.tools.tools.values()),
            "audio": session.audio,
        }
        sid = session.session_id
        return with_native_settings(KEPT_CONFIGS.get(sid) or SessionConfig(sid, self.model), native)

    def _error(self, code: Any, text: str, *, server: bool = False) -> dict[str, Any]:
        counter = self.dialect.next_connection_event_id() if self.dialect else "event_0_0_c0"
        return error_event(
            counter,
            error_type=SERVER_ERROR if server or code == "internal_error" else INVALID_REQUEST,
            code=code if isinstance(code, str) else None,
            message=text,
        )

    # -- Realtime client events → native ---------------------------------

    async def _on_data(self, frame: str | bytes) -> None:
        if len(self._control) >= MAX_QUEUED_CONTROL:
            # Every client event can queue an answer here (the outbox bounds session
            # events only): far above what a burst queues while the client reads.
            self.close_slow_consumer("slow consumer: answers not read; resume")
            return
        dialect, runtime = self.dialect, self.runtime
        if isinstance(frame, bytes):
            super().send_control(self._error("invalid_event", "events are json text frames"))
            return
        try:
            obj = self.codec.decode(frame)
        except ProtocolViolation as violation:
            super().send_control(self._error(violation.code.value, violation.message))
            return
        if dialect is None or runtime is None:
            super().send_control(self._error("no_session", "the session is not open"))
            return
        translation = translate_client_event(dialect, obj)
        for reply in translation.replies:
            super().send_control(reply)
        for item in translation.native:
            try:
                if isinstance(item, InputAudio):
                    self._append_audio(item.pcm)
                else:
                    runtime.handle(item)
            except Exception:
                log.exception("failed to handle a realtime event")
                super().send_control(
                    self._error("internal_error", "could not handle the event", server=True)
                )

    def _append_audio(self, pcm: bytes) -> None:
        runtime = self.runtime
        if runtime is None:
            return
        data = self._audio_rest + pcm
        offset = 0
        while len(data) - offset >= MIN_CHUNK_BYTES:
            chunk = data[offset : offset + CHUNK_BYTES]
            offset += len(chunk)
            self._audio_seq += 1
            runtime.audio_frame(AudioFrame(AudioKind.INPUT, 0, self._audio_seq, chunk).encode())
        self._audio_rest = data[offset:]

    # -- numbered native events → Realtime -------------------------------

    def vet_resume(self, runtime: SessionEndpoint) -> bool:
        """Refuse a resume the translation cannot serve before it replaces the session's
        live connection (that one goes on serving; the session is left as it was)."""
        refusal = self._resume_refusal(runtime.session, runtime.acked_seq)
        self._resume_vetted = refusal is None
        if refusal is None or runtime.transport is None:
            return True  # a session nobody holds is refused after binding (start_replay)
        self._resume = None
        self._refuse_resume(*refusal)
        return False

    def stored_resume_check(self) -> Callable[[ServerSession, int], bool] | None:
        """The check a takeover runs before its claim: :meth:`vet_stored`."""
        return self.vet_stored

    def vet_stored(self, session: ServerSession, acked_seq: int) -> bool:
        """Refuse, before another worker's session is taken over, a resume its stored
        log cannot serve (``session``: as the takeover would restore it): refused after
        the claim, it would end the session on its live owner."""
        refusal = self._resume_refusal(session, acked_seq)
        if refusal is None:
            return True
        self._resume = None
        self._refuse_resume(*refusal)
        return False

    def _resume_refusal(self, session: ServerSession, acked_seq: int) -> tuple[str, str] | None:
        """Why the resume asked for cannot be served from the session's replay, if so."""
        request = self._resume
        if request is None:
            return None
        config = self.dialect.config if self.dialect else self._resumed_config(session)
        try:
            # The rebuild starts at the acked quiet point: a long answer since may have
            # pushed it out of the replay (replay_unavailable), although the seen event
            # itself is still there.
            history = session.replay_after(acked_seq)
            first = history[0] if history else None
            if first is not None and first.response_id and first.type != "response.created":
                # Taken over from a stored log trimmed inside a response: no quiet point
                # to rebuild from (the same worker refuses this as replay_unavailable too).
                raise ResumeRefused(ErrorCode.REPLAY_UNAVAILABLE, "the replay starts mid-answer")
            # The whole replay, past the seen event too: one the translation cannot
            # take (a damaged stored entry) is refused here, before a takeover claims
            # the session, not as a failing writer after it.
            messages = [event.to_message() for event in history]
            check_replay(DialectState(config), messages, request.seen)
        except ResumeRequestInvalid as invalid:
            return invalid.code, invalid.message
        except ResumeRefused as refused:
            return refused.code.value, refused.message
        except Exception as exc:
            log.error("replay of %s does not translate: %r", session.session_id, exc)
            return ErrorCode.REPLAY_UNAVAILABLE.value, "the stored replay log is unreadable"
        return None

    def start_replay(self, events: list[Event]) -> bool:
        """Rebuild the translation from the last quiet point, then replay what was missed.

        The native resume gives the events after the seen event's seq; the rebuild
        needs those from the acked point (the last quiet point one response back).
        """
        request, runtime, dialect = self._resume, self.runtime, self.dialect
        if request is None or runtime is None or dialect is None:
            self._resume = None
            return super().start_replay(events)
        refusal = None
        if not self._resume_vetted:
            refusal = self._resume_refusal(runtime.session, runtime.acked_seq)
        self._resume = None
        history: list[Event] = []
        if refusal is None:
            try:
                history = runtime.session.replay_after(runtime.acked_seq)
            except ResumeRefused as refused:
                # Vetted, but the previous connection's queued events were numbered into
                # the replay at its detach since, and pushed the quiet point out.
                refusal = refused.code.value, refused.message
        if refusal is not None:
            # Attached already: leave the session resumable as it was, refuse this one.
            self.runtime = None
            runtime.detach(self, Departure.LOST, reason="resume_refused")
            self._refuse_resume(*refusal)
            return False
        self._skip_to = request.seen
        if request.seen is not None:
            dialect.written = (request.seen.seq, request.seen.index)
        # The acked point is the oldest quiet point the replay holds; those after it are
        # known again as the replay passes them.
        self._quiet_seqs = (None, runtime.acked_seq or None)
        return super().start_replay(history)

    def _next_frame(self) -> tuple[bytes, bool] | None:
        """The native step, past the events that translate to nothing here."""
        frame = super()._next_frame()
        while frame is _NOTHING:
            frame = super()._next_frame()
        return frame

    def _encode_event(self, event: Event) -> tuple[bytes, bool]:
        """The first frame of the Realtime events ``event`` translates to (or
        :data:`_NOTHING`); the others go to the front of the connection messages.

        That queue is empty here (the native step takes a session event only then),
        so an answer queued while they are written is written after all of them.
        """
        dialect = self.dialect
        if dialect is None:
            return _NOTHING
        translated = translate_event(dialect, event.to_message())
        skip = self._skip_to
        if skip is not None:
            if event.seq >= skip.seq:
                self._skip_to = None
            if event.seq < skip.seq:
                translated = []
            elif event.seq == skip.seq:
                translated = translated[skip.skip :]
        if translated:
            # Before the writes: an answer queued meanwhile is written after all of them.
            last = parse_event_id(translated[-1]["event_id"])
            if last is not None:
                dialect.written = (last.seq, last.index)
        out: list[dict[str, Any]] = []
        for message in translated:
            out.append(message)
            if message["type"] == "response.done":
                out.append(self._rate_limits(dialect))
        out += dialect.take_ready_replies()
        if event.type == "session.updated":
            self.keep_config()
        elif event.type == "response.done" and dialect.quiet:
            self._quiet(event.seq)
        elif event.type == "response.created":
            # A client that lost the answer before this one and some of this one has
            # lost more than the last whole answer: the quiet point before them may go.
            self._ack_quiet(self._quiet_seqs[0])
        if not out:
            return _NOTHING
        # Encoded when taken, each just before its write, as the first one is here.
        self._control[:0] = out[1:]
        return self._encode_control(out[0])

    def _rate_limits(self, dialect: DialectState) -> dict[str, Any]:
        """``rate_limits.updated``: the principal's message rate as ``requests``; empty
        when it has none (the Realtime API names only ``requests`` and ``tokens``)."""
        allowance = message_allowance(self.quota)
        limits = [] if allowance is None else [asdict(allowance) | {"name": "requests"}]
        return rate_limits_updated(dialect, limits)

    def _quiet(self, seq: int) -> None:
        """Nothing runs after ``seq``: ack the quiet point two before it natively.

        The replay buffer then holds the last two answers from the quiet point before
        them, and once the next response starts (``response.created``) the last answer
        and that one, from the quiet point before the last answer. A client that lost
        the last answer whole names an event of the quiet point that ended the answer
        before (its ``response.done``, or what followed): a resume replays that seq
        again and cuts it, so it must be buffered too, and the rebuild starts from the
        quiet point one further back. Acking only then bounds memory without betting
        that the client has what was just written.
        """
        older, previous = self._quiet_seqs
        self._quiet_seqs = (previous, seq)
        self._ack_quiet(older)

    def _ack_quiet(self, seq: int | None) -> None:
        """Ack the quiet point ``seq`` natively, unless it is acked already."""
        runtime = self.runtime
        if runtime is not None and seq is not None and seq > runtime.acked_seq:
            runtime.handle(Ack(type="ack", seq=seq))
