"""The two dialects as one benchmark client sees them: how to open, ask, cancel, read.

Both run over the same client stack (this environment's ``websockets``, JSON text
frames), so a difference between them is the endpoint's cost, not the client's.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from protocol.dialects.realtime.session_config import SAMPLE_RATE

QUESTION = "Say something."
READ_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the native protocol and ``/v1/realtime`` for one turn."""

    name: str
    path: str
    text_deltas: frozenset[str]
    """The event types that carry answer text (the first one is TTFT)."""
    voice: bool = False
    """A native session opened with audio settings, as the Realtime endpoint opens its own."""

    @property
    def native(self) -> bool:
        return self.path == "/"

    def ask(self, text: str) -> list[str]:
        """The frames that add a user turn and start a response."""
        if self.native:
            return [json.dumps({"type": "response.create", "input": text})]
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        return [
            json.dumps({"type": "conversation.item.create", "item": item}),
            json.dumps({"type": "response.create"}),
        ]

    def status(self, done: dict[str, Any]) -> str:
        """The terminal status of a ``response.done``."""
        return str(done["status"] if self.native else done["response"]["status"])


NATIVE = Dialect("native", "/", frozenset({"response.text.delta"}))
REALTIME = Dialect(
    "realtime",
    "/v1/realtime?model=gpt-realtime",
    frozenset({"response.output_text.delta", "response.output_audio_transcript.delta"}),
)
NATIVE_VOICE = Dialect("native_voice", "/", frozenset({"response.text.delta"}), voice=True)
DIALECTS = (NATIVE, REALTIME, NATIVE_VOICE)


class DialectClient:
    """One open session of one dialect."""

    def __init__(self, dialect: Dialect, ws: ClientConnection) -> None:
        self.dialect = dialect
        self.ws = ws

    @classmethod
    async def open(cls, dialect: Dialect, url: str) -> DialectClient:
        """Connect and wait until the session is open (and, in Realtime, text-only)."""
        ws = await connect(url + dialect.path, compression=None, max_size=None)
        client = cls(dialect, ws)
        if dialect.native:
            # A text session: the engine work of a Realtime session made text-only (its
            # session.update turns audio output off); or a voice one, as the endpoint
            # opens it (the engine then also makes audio).
            start: dict[str, Any] = {"type": "session.start"}
            if dialect.voice:
                start["audio"] = {"sample_rate": SAMPLE_RATE}
            await ws.send(json.dumps(start))
            await client.until("session.ready")
        else:
            await client.until("session.created")
            session = {"type": "realtime", "output_modalities": ["text"]}
            await ws.send(json.dumps({"type": "session.update", "session": session}))
            await client.until("session.updated")
        return client

    async def recv(self) -> dict[str, Any]:
        frame = await asyncio.wait_for(self.ws.recv(), READ_TIMEOUT_S)
        if isinstance(frame, bytes):
            return {"type": "binary"}  # a native audio frame: not text
        event: dict[str, Any] = json.loads(frame)
        if event.get("type") == "error":
            raise RuntimeError(f"{self.dialect.name}: server error {event}")
        return event

    async def until(self, event_type: str) -> dict[str, Any]:
        while True:
            event = await self.recv()
            if event.get("type") == event_type:
                return event

    async def answer(self) -> dict[str, Any]:
        """One whole answer: TTFT (request sent -> first text delta), status, deltas."""
        began = time.perf_counter()
        for frame in self.dialect.ask(QUESTION):
            await self.ws.send(frame)
        ttft, deltas = None, 0
        while True:
            event = await self.recv()
            if event["type"] in self.dialect.text_deltas:
                deltas += 1
                if ttft is None:
                    ttft = time.perf_counter() - began
            elif event["type"] == "response.done":
                return {"ttft_s": ttft, "status": self.dialect.status(event), "deltas": deltas}

    async def cancelled(self, after: int) -> dict[str, Any]:
        """An answer cancelled after ``after`` text deltas: ``response.cancel`` sent ->
        ``response.done`` received, and its status."""
        for frame in self.dialect.ask(QUESTION):
            await self.ws.send(frame)
        deltas = 0
        while deltas < after:
            event = await self.recv()
            if event["type"] in self.dialect.text_deltas:
                deltas += 1
            elif event["type"] == "response.done":
                return {"cancel_s": None, "status": self.dialect.status(event)}
        began = time.perf_counter()
        await self.ws.send(json.dumps({"type": "response.cancel"}))
        done = await self.until("response.done")
        return {"cancel_s": time.perf_counter() - began, "status": self.dialect.status(done)}

    async def close(self) -> None:
        await self.ws.close()
