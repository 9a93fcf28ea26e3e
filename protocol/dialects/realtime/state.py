"""The per-connection state the Realtime translation needs, in one place.

Realtime events name output items, output indexes and content indexes that the
native events do not carry; this state assigns them as a response streams and
forgets a response once its ``response.done`` is translated. Item ids are derived
from the native response id and the output index, so translating the same native
events again gives the same ids.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from protocol.dialects.realtime.event_ids import connection_event_id
from protocol.dialects.realtime.session_config import SessionConfig

MAX_REMEMBERED_ITEMS = 256
"""Items kept for ``conversation.item.retrieve`` and ``truncate`` (the newest)."""

MAX_APPEND_BYTES = 3 * 1024 * 1024
"""Largest decoded ``input_audio_buffer.append`` (about 65 s of 24 kHz PCM16)."""


@dataclass(slots=True)
class OutputItem:
    """One output item of a response: an assistant message or a function call."""

    item_id: str
    output_index: int
    kind: Literal["message", "function_call"]
    audio: bool = False
    """A message whose one content part is audio (its text is the transcript)."""
    text: list[str] = field(default_factory=list)
    audio_started: bool = False
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    open: bool = True


@dataclass(slots=True)
class ResponseState:
    """What the translation knows of one running response."""

    response_id: str
    outputs: list[OutputItem] = field(default_factory=list)
    message: OutputItem | None = None
    """The message item text and audio deltas go to now (none open: the next opens one)."""
    calls: dict[str, OutputItem] = field(default_factory=dict)
    continues_after_results: bool = False
    """The client sent a result of one of its calls: the native response goes on by
    itself, so the ``response.create`` a Realtime client sends next starts nothing."""

    def new_item(self, kind: Literal["message", "function_call"]) -> OutputItem:
        """Open the response's next output item."""
        index = len(self.outputs)
        item = OutputItem(f"item_{self.response_id}_{index}", index, kind)
        self.outputs.append(item)
        return item


@dataclass(slots=True)
class DialectState:
    """Everything one Realtime connection's translation remembers."""

    config: SessionConfig
    max_append_bytes: int = MAX_APPEND_BYTES
    responses: dict[str, ResponseState] = field(default_factory=dict)
    items: OrderedDict[str, tuple[dict[str, Any], str | None]] = field(default_factory=OrderedDict)
    """Recent items by id, as last sent, with the id of the item before each."""
    item_responses: dict[str, str] = field(default_factory=dict)
    """Assistant item id → the native response that produced it."""
    last_item_id: str | None = None
    user_items: int = 0
    pending_user_item: str | None = None
    """The user item the speech in progress will become (named at speech_started)."""
    transcript_item: str | None = None
    transcript_text: str = ""
    transcript_answered: bool = False
    """A response to the turn whose transcript is awaited has ended (a session without
    speech-to-text never gets one: the wait no longer keeps the stream from quiet)."""
    transcript_seconds: float = 0.0
    connection_events: int = 0
    connection_tag: str = ""
    """Set on a resumed connection, so its connection event ids differ from earlier ones."""
    written: tuple[int, int] = (0, 0)
    """(seq, k) of the last session event the connection wrote (or is writing): the
    point a connection event queued now follows on the wire."""

    def next_connection_event_id(self) -> str:
        """An id for an event that is not a native session event."""
        self.connection_events += 1
        return connection_event_id(self.written, self.connection_events, self.connection_tag)

    def next_user_item_id(self) -> str:
        """A fresh id for a user item the client created without naming it."""
        self.user_items += 1
        return f"item_user_c{self.user_items}"

    @property
    def quiet(self) -> bool:
        """No response, speech or transcript in progress: a point a resume can rebuild from."""
        return (
            not self.responses
            and self.pending_user_item is None
            and (self.transcript_item is None or self.transcript_answered)
        )

    def remember(self, item: dict[str, Any], response_id: str | None = None) -> str | None:
        """Keep ``item`` (bounded); return the id of the item before it in the conversation."""
        item_id: str = item["id"]
        known = self.items.get(item_id)
        previous = known[1] if known is not None else self.last_item_id
        self.items[item_id] = (item, previous)
        self.items.move_to_end(item_id)
        if known is None:
            self.last_item_id = item_id
        if response_id is not None:
            self.item_responses[item_id] = response_id
        while len(self.items) > MAX_REMEMBERED_ITEMS:
            old, _ = self.items.popitem(last=False)
            self.item_responses.pop(old, None)
        return previous
