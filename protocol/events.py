"""Server → client events.

Events are built on the hot path (one per token), so they are light slotted
objects holding a plain dict of fields; no pydantic model is constructed. An
event gets its ``seq`` only when it leaves the outbox (see
:class:`protocol.outbox.Outbox`), which lets queued text deltas merge without
leaving holes in the numbering.
"""

from __future__ import annotations

from typing import Any

from protocol.json_value import is_valid_text, safe_text

# Session events (sequenced, replayable).
RESPONSE_CREATED = "response.created"
TEXT_DELTA = "response.text.delta"
RESPONSE_DONE = "response.done"
AUDIO_DELTA = "response.audio.delta"
"""Sent as a binary audio frame (kind 2), never as a text or msgpack message."""
SPEECH_STARTED = "input_audio.speech_started"
SPEECH_STOPPED = "input_audio.speech_stopped"
INPUT_COMMITTED = "input_audio.committed"
INPUT_CLEARED = "input_audio.cleared"
INPUT_DISCARDED = "input_audio.discarded"
INPUT_TRANSCRIPT = "input_audio.transcript"
"""What a speech engine heard in the user's spoken turn (partial, then final)."""
TOOL_CALL_DELTA = "response.tool_call.delta"
"""Provisional: arguments still streaming; may never become a call."""
TOOL_CALL = "response.tool_call"
"""A complete call with arguments valid against the tool's schema: run it."""
TOOL_CALL_CLOSED = "response.tool_call.closed"
TOOL_CALL_REJECTED = "response.tool_call.rejected"
"""A call's arguments were invalid: its provisional deltas are void; the engine retries."""
TOOL_RESULT_ACCEPTED = "tool.result.accepted"
OUTPUT_JSON_DELTA = "response.output_json.delta"
OUTPUT_JSON_DONE = "response.output_json.done"
SESSION_UPDATED = "session.updated"
ERROR = "error"

# Connection messages (not sequenced, never replayed).
SESSION_READY = "session.ready"
HEARTBEAT = "heartbeat"
PONG = "pong"

# Approximate framing overhead of one event, for byte accounting.
EVENT_OVERHEAD_BYTES = 64


class Event:
    """One session event: a type, its fields, and (once sent) its seq."""

    __slots__ = ("fields", "response_id", "seq", "size", "tokens", "type")

    def __init__(
        self,
        type: str,
        fields: dict[str, Any],
        *,
        response_id: str | None = None,
        tokens: int = 0,
        size: int = EVENT_OVERHEAD_BYTES,
    ) -> None:
        self.type = type
        self.fields = fields
        self.response_id = response_id
        self.tokens = tokens
        self.size = size
        self.seq = 0

    def to_message(self) -> dict[str, Any]:
        """The wire message: ``type``, ``seq`` and the event's fields."""
        message: dict[str, Any] = {"type": self.type, "seq": self.seq}
        message.update(self.fields)
        # A field never overrides the envelope (an error's details are fields too).
        message["type"], message["seq"] = self.type, self.seq
        return message

    def __repr__(self) -> str:
        return f"Event({self.type!r}, seq={self.seq}, {self.fields!r})"


class TextDelta(Event):
    """A text delta whose text may still grow by merging while it waits in the outbox."""

    __slots__ = ("parts",)

    def __init__(self, response_id: str, text: str, tokens: int) -> None:
        # Made once per token: plain assignments, no super() call with keywords.
        self.type = TEXT_DELTA
        self.fields = {"response_id": response_id}
        self.response_id = response_id
        self.tokens = tokens
        self.size = EVENT_OVERHEAD_BYTES + len(text)
        self.seq = 0
        self.parts = [text]

    def merge(self, text: str, tokens: int) -> None:
        """Append more text of the same response (the client is lagging)."""
        self.parts.append(text)
        self.tokens += tokens
        self.size += len(text)

    def seal(self) -> str:
        """Freeze the merged text into the ``delta`` field and return it."""
        text = "".join(self.parts) if len(self.parts) > 1 else self.parts[0]
        self.parts = [text]
        self.fields["delta"] = text
        return text


class AudioDelta(Event):
    """A chunk of a response's audio; merges with the next chunk while the client lags."""

    __slots__ = ("chunks",)

    def __init__(self, response_id: str, stream_id: int, audio: bytes, duration_ms: float) -> None:
        self.type = AUDIO_DELTA
        self.fields = {"response_id": response_id, "stream_id": stream_id}
        self.response_id = response_id
        self.tokens = 0
        self.size = EVENT_OVERHEAD_BYTES + len(audio)
        self.seq = 0
        self.chunks = [audio]
        self.fields["duration_ms"] = duration_ms

    def merge(self, audio: bytes, duration_ms: float) -> None:
        """Append the next chunk of the same response's audio."""
        self.chunks.append(audio)
        self.size += len(audio)
        self.fields["duration_ms"] += duration_ms

    def seal(self) -> bytes:
        """Freeze the merged chunks into the ``audio`` field and return them."""
        audio = b"".join(self.chunks) if len(self.chunks) > 1 else self.chunks[0]
        self.chunks = [audio]
        self.fields["audio"] = audio
        return audio

    @property
    def duration_ms(self) -> float:
        """Playing time of the (merged) audio."""
        value: float = self.fields["duration_ms"]
        return value


def event_from_message(message: dict[str, Any], size: int) -> Event:
    """Rebuild a numbered event from its wire form (events read back from a store)."""
    fields = {k: v for k, v in message.items() if k not in ("type", "seq")}
    response_id = fields.get("response_id")
    event = Event(
        str(message["type"]),
        fields,
        response_id=response_id if isinstance(response_id, str) else None,
        size=size,
    )
    event.seq = int(message["seq"])
    return event


def connection_message(type: str, **fields: Any) -> dict[str, Any]:
    """A connection-level message (no seq), such as ``session.ready`` or ``pong``."""
    message: dict[str, Any] = {"type": type}
    message.update(fields)
    return message


MAX_ERROR_MESSAGE = 1000
"""Longest ``message`` of an ``error`` event, in characters."""


def error_fields(
    code: str, message: str, request_id: str | None, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Fields of an ``error`` event.

    Messages are often built from client input, and an error event is replayed after
    every resume: whatever went in, the event must encode. So ``message`` is cut to
    :data:`MAX_ERROR_MESSAGE` characters with invalid text escaped, and a ``request_id``
    that is not valid text or is over 128 characters is left out.
    """
    fields: dict[str, Any] = {"code": code, "message": safe_text(message, MAX_ERROR_MESSAGE)}
    if request_id is not None and len(request_id) <= 128 and is_valid_text(request_id):
        fields["request_id"] = request_id
    if details:
        fields.update(details)
    return fields
