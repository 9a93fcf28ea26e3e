"""The ``/v1/realtime`` endpoint: a WebSocket connection speaking the OpenAI Realtime schema.

It is the native :class:`~wsserver.transport.websocket.Connection` (same reader and
writer tasks, rate limits, session runtime, replay) with the translation of
:mod:`protocol.dialects.realtime` at both edges: each Realtime client event becomes
native messages and input audio, each numbered native event becomes the Realtime
events it translates to. A Realtime client expects a session at once, so one is
opened when the connection is (voice, PCM16 at 24 kHz, server VAD).
"""

from __future__ import annotations

import logging
from typing import Any

from websockets.asyncio.server import ServerConnection

from protocol.audio_frame import AudioFrame, AudioKind
from protocol.dialects.realtime.client_events import (
    InputAudio,
    SessionConfigured,
    translate_client_event,
)
from protocol.dialects.realtime.errors import INVALID_REQUEST, SERVER_ERROR, error_event
from protocol.dialects.realtime.server_events import session_created, translate_event
from protocol.dialects.realtime.session_config import SAMPLE_RATE, SessionConfig
from protocol.dialects.realtime.state import DialectState
from protocol.errors import ProtocolViolation
from protocol.events import Event
from protocol.messages import AudioSettings, SessionStart
from wsserver.transport.base import ConnectionHost
from wsserver.transport.websocket import Connection

log = logging.getLogger(__name__)

REALTIME_PATH = "/v1/realtime"
DEFAULT_MODEL = "wsserver"

CHUNK_BYTES = SAMPLE_RATE * 2 // 10
"""100 ms of PCM16: the native input audio takes chunks of 10-100 ms."""
MIN_CHUNK_BYTES = SAMPLE_RATE * 2 // 100
"""10 ms: a shorter tail waits for the next append."""


class RealtimeConnection(Connection):
    """A Realtime client's connection over the native session runtime."""

    __slots__ = ("_audio_rest", "_audio_seq", "dialect", "model")

    def __init__(self, ws: ServerConnection, server: ConnectionHost, model: str) -> None:
        super().__init__(ws, server)
        self.model = model
        self.dialect: DialectState | None = None
        self._audio_seq = 0
        self._audio_rest = b""

    async def run(self) -> None:
        """Open the session (Realtime clients send nothing first), then serve."""
        start = SessionStart(type="session.start", audio=AudioSettings(sample_rate=SAMPLE_RATE))
        await self.server.open_session(self, start)
        await super().run()

    # -- native connection messages → Realtime --------------------------

    def send_control(self, message: dict[str, Any]) -> None:
        """Translate a native connection message; heartbeats and pongs have no counterpart."""
        kind = message.get("type")
        if kind == "session.ready" and self.dialect is None:
            self.dialect = DialectState(SessionConfig(str(message["session_id"]), self.model))
            super().send_control(session_created(self.dialect))
        elif kind == "error":
            super().send_control(self._error(message.get("code"), str(message.get("message"))))

    def _error(self, code: Any, text: str, *, server: bool = False) -> dict[str, Any]:
        counter = self.dialect.next_connection_event_id() if self.dialect else "event_c0"
        return error_event(
            counter,
            error_type=SERVER_ERROR if server or code == "internal_error" else INVALID_REQUEST,
            code=code if isinstance(code, str) else None,
            message=text,
        )

    # -- Realtime client events → native ---------------------------------

    async def _on_data(self, frame: str | bytes) -> None:
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
                elif isinstance(item, SessionConfigured):
                    # Instructions, modalities and turn detection are kept by the
                    # dialect; the session core takes only tools mid-session (for now).
                    continue
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

    async def _send_event(self, event: Event) -> None:
        dialect = self.dialect
        if dialect is None:
            return
        for out in translate_event(dialect, event.to_message()):
            await self._send(self._encode_control(out))
