"""One client session of the load test: open, ask, cut, resume, with every ``seq`` accounted.

It uses this environment's ``websockets`` client (JSON subprotocol) so it speaks to any
URL: a worker, the router, or a deployed cluster's front door. Binary frames are the
protocol's audio frames (:mod:`protocol.audio_frame`); their ``seq`` is a session event's.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException

from loadtest.command.recorder import Recorder
from protocol.audio_frame import AudioFrame, AudioKind, decode_audio_frame
from protocol.encoding import JSON_SUBPROTOCOL
from protocol.errors import ProtocolViolation

OPEN_TIMEOUT_S = 10.0
MAX_FRAME_BYTES = 16 * 1024 * 1024
"""Largest message taken from a target (far above any event a worker sends): a hostile
one claiming a gigabyte is refused at its header (1009), not buffered for the run."""


class SessionFailed(RuntimeError):
    """The server refused or dropped the session in a way the scenario did not ask for."""


@dataclass(slots=True)
class SeqLedger:
    """Every ``seq`` received, to count lost (a hole) and doubled (twice) events."""

    seen: Counter[int] = field(default_factory=Counter)
    done_per_response: Counter[str] = field(default_factory=Counter)

    def add(self, seq: int) -> None:
        """One numbered event arrived."""
        self.seen[seq] += 1

    @property
    def last(self) -> int:
        """The highest seq received (0: none)."""
        return max(self.seen, default=0)

    def lost(self) -> int:
        """Seqs in 1..last that never arrived."""
        return sum(1 for seq in range(1, self.last + 1) if seq not in self.seen)

    def doubled(self) -> int:
        """Extra arrivals of a seq, plus extra ``response.done`` of one response."""
        extra_seqs = sum(n - 1 for n in self.seen.values() if n > 1)
        return extra_seqs + sum(n - 1 for n in self.done_per_response.values() if n > 1)


def voice_start(*, create_response: bool) -> dict[str, Any]:
    """A voice session: 16 kHz in, audio out, the client commits turns (manual)."""
    return {
        "type": "session.start",
        "audio": {
            "sample_rate": 16000,
            "output": True,
            "turn_detection": {"type": "manual", "create_response": create_response},
        },
    }


class Session:
    """One session; :meth:`recv` keeps the ledger and the recorder's counts."""

    def __init__(self, url: str, api_key: str, recorder: Recorder) -> None:
        self.url = url
        self.api_key = api_key
        self.rec = recorder
        self.ws: ClientConnection | None = None
        self.session_id = ""
        self.resume_token = ""
        self.ledger = SeqLedger()
        self.resumable = True
        self.audio_turn = 0
        self.chunks = 0
        self.cut_pending = False
        self.cut_time = 0.0
        self.expected_errors: frozenset[str] = frozenset()
        """Error codes the scenario's races make (counted, not errors): a blind asker's
        ``response_in_progress``; an interrupt that crossed the answer's end."""
        self.receive_buffer = 0
        """``SO_RCVBUF`` before connecting (0: the kernel's): a small one makes a reader
        that stops push back on the server within seconds."""

    async def _connect(self) -> ClientConnection:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else None
        try:
            sock = await self._socket() if self.receive_buffer else None
            return await connect(
                self.url,
                sock=sock,
                additional_headers=headers,
                subprotocols=[JSON_SUBPROTOCOL],  # type: ignore[list-item]
                open_timeout=OPEN_TIMEOUT_S,
                ping_interval=None,  # the server's heartbeats keep the connection alive
                max_size=MAX_FRAME_BYTES,
                compression=None,
            )
        except (OSError, TimeoutError, WebSocketException) as exc:
            self.rec.errors[f"connect: {type(exc).__name__}"] += 1
            raise SessionFailed(f"connect failed: {exc}") from exc

    async def _socket(self) -> socket.socket:
        parts = urlsplit(self.url)
        port = parts.port or (443 if parts.scheme == "wss" else 80)
        info = await asyncio.get_running_loop().getaddrinfo(parts.hostname, port)
        family, kind, proto, _, address = info[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer)
        sock.setblocking(False)
        try:
            await asyncio.wait_for(
                asyncio.get_running_loop().sock_connect(sock, address), OPEN_TIMEOUT_S
            )
        except BaseException:
            sock.close()
            raise
        return sock

    async def open(self, start: dict[str, Any] | None = None) -> None:
        """Connect and start a session (``session.ready`` received)."""
        self.ws = await self._connect()
        await self.send(start or {"type": "session.start"})
        ready = await self._until_ready()
        self.rec.counters["sessions_opened"] += 1
        self.session_id = str(ready.get("session_id", ""))
        self.resume_token = str(ready.get("resume_token", ""))
        # The baseline server has no sessions to resume: it sends no token.
        self.resumable = bool(self.resume_token)

    async def _until_ready(self) -> dict[str, Any]:
        while True:
            event = await self.recv(OPEN_TIMEOUT_S)
            if event["type"] == "session.ready":
                return event
            if event["type"] == "error":  # counted by recv
                raise SessionFailed(f"session refused: {event.get('code')}")

    async def send(self, message: dict[str, Any]) -> None:
        """Send one JSON message."""
        assert self.ws is not None
        await self.ws.send(json.dumps(message))

    async def send_audio(self, pcm: bytes, *, last: bool) -> None:
        """One input audio chunk of the current turn (chunk numbers run on across turns)."""
        assert self.ws is not None
        frame = AudioFrame(AudioKind.INPUT, self.audio_turn, self.chunks, pcm, last).encode()
        self.chunks += 1
        await self.ws.send(frame)

    async def recv(self, timeout_s: float) -> dict[str, Any]:
        """The next event (an audio frame as ``response.audio.delta`` with ``bytes``)."""
        assert self.ws is not None
        # Not wait_for: on Python 3.11 it swallows a cancel that comes with a frame.
        async with asyncio.timeout(timeout_s):
            frame = await self.ws.recv()
        self.rec.events += 1
        try:
            event = _event_of(frame)
        except (ValueError, ProtocolViolation) as exc:
            # Any URL may be loaded: a target that is not this protocol ends the session.
            self.rec.errors["undecodable frame from the server"] += 1
            raise SessionFailed(f"undecodable frame: {exc}") from exc
        seq = event.get("seq")
        if isinstance(seq, int):
            self.ledger.add(seq)
        if event.get("type") == "response.done":
            self.ledger.done_per_response[str(event.get("response_id"))] += 1
            status = str(event.get("status"))
            reason = event.get("reason")
            self.rec.statuses[f"{status}/{reason}" if reason else status] += 1
        elif event.get("type") == "error":
            code = str(event.get("code"))
            if code in self.expected_errors:
                self.rec.counters[f"expected {code}"] += 1
            else:
                self.rec.errors[code] += 1
        return event

    def cut(self) -> None:
        """Abort the TCP connection: no close frame, unread bytes lost (a network handoff)."""
        if self.ws is not None:
            self.ws.transport.abort()
        self.cut_pending = True
        self.cut_time = time.monotonic()
        self.rec.counters["connections_cut"] += 1

    async def resume(self) -> bool:
        """A new connection and ``session.resume`` from the last seq; ``True`` when resumed.

        Against the baseline (nothing to resume) it starts a fresh session instead.
        """
        self.cut_pending = False
        self.ws = await self._connect()
        if not self.resumable:
            self.tally()
            self.ledger = SeqLedger()  # a fresh session numbers from 1 again
            await self.send({"type": "session.start"})
        else:
            await self.send(
                {
                    "type": "session.resume",
                    "session_id": self.session_id,
                    "resume_token": self.resume_token,
                    "last_seq": self.ledger.last,
                }
            )
        ready = await self._until_ready()
        # From the cut, not the reconnect: what the user waits, whatever the session did meanwhile.
        self.rec.sample("reconnect_ready_ms", time.monotonic() - self.cut_time)
        resumed = bool(ready.get("resumed"))
        self.rec.counters["resumed" if resumed else "restarted"] += 1
        return resumed

    def tally(self) -> None:
        """Add this session's lost and doubled events to the recorder (once per ledger)."""
        self.rec.counters["lost_events"] += self.ledger.lost()
        self.rec.counters["doubled_events"] += self.ledger.doubled()
        self.rec.counters["events_numbered"] += sum(self.ledger.seen.values())

    async def close(self, code: int = 1000) -> None:
        """Close with ``code`` (1000 ends the session on the server), bounded in time."""
        if self.ws is None:
            return
        try:
            await asyncio.wait_for(self.ws.close(code), 3.0)
        except (TimeoutError, ConnectionClosed, OSError):
            self.ws.transport.abort()


def _event_of(frame: str | bytes) -> dict[str, Any]:
    """A frame as an event dict with a ``type`` (an audio frame as ``response.audio.delta``)."""
    if isinstance(frame, bytes):
        audio = decode_audio_frame(frame)
        return {"type": "response.audio.delta", "seq": audio.seq, "bytes": len(audio.payload)}
    event = json.loads(frame)
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise ValueError("not an event object with a type")
    return event


def close_code_of(exc: ConnectionClosed) -> str:
    """The server's close code, or ``none`` when the connection ended without one."""
    return str(exc.rcvd.code) if exc.rcvd is not None else "none"
