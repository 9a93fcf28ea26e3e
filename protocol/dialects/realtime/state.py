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
from protocol.dialects.realtime.session_config import Modality, SessionConfig

MAX_REMEMBERED_ITEMS = 256
"""Items kept for ``conversation.item.retrieve`` and ``truncate`` (the newest)."""

MAX_REMEMBERED_CHARS = 4 * 1024 * 1024
"""The text those items may hold together (a client's outputs can be near a frame each:
counted alone, 256 of them would be 256 MiB a connection)."""

MAX_PENDING_REQUESTS = 256
"""Native requests awaiting their answer that the translation remembers (the oldest
other than a ``session.update`` forgotten first: a client that floods them loses only
the ids of its errors)."""

MAX_PENDING_UPDATES = MAX_PENDING_REQUESTS // 2
"""``session.update`` events awaiting their answer: never forgotten (each answer applies
the oldest one's patch, in order), so a client past this many is refused more."""

MAX_PENDING_UPDATE_CHARS = 8 * 1024 * 1024
"""The text (instructions, tool descriptions and schemas) of the ``session.update``
events awaiting their answer, together: a client that floods them while not reading
is refused more, as 256 near a frame each would be 256 MiB a connection."""

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


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A ``session.update`` or ``response.create`` sent natively, until it is answered."""

    client_event_id: str | None
    patch: Any = None
    """``session.update``: the Realtime session patch, applied when the core accepts it."""
    output_modalities: tuple[Modality, ...] | None = None
    max_output_tokens: int | Literal["inf"] | None = None
    size: int = 0
    """The characters of text the patch holds (what :data:`MAX_PENDING_UPDATE_CHARS` counts)."""
    output_item: dict[str, Any] | None = None
    """``function_call_output``: the item, reported added when the core applied it."""
    call_id: str | None = None


@dataclass(slots=True)
class ResponseState:
    """What the translation knows of one running response."""

    response_id: str
    outputs: list[OutputItem] = field(default_factory=list)
    message: OutputItem | None = None
    """The message item text and audio deltas go to now (none open: the next opens one)."""
    calls: dict[str, OutputItem] = field(default_factory=dict)
    output_modalities: tuple[Modality, ...] | None = None
    """What its ``response.create`` asked for (``None``: the session's)."""
    max_output_tokens: int | Literal["inf"] | None = None
    """Its ``response.create``'s limit (``None``: the session's)."""

    @property
    def audio(self) -> bool | None:
        """Whether it speaks, when its ``response.create`` said so."""
        modalities = self.output_modalities
        return None if modalities is None else "audio" in modalities

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
    """The settings in force: the core accepted them (shown in ``session.updated``)."""
    requested: SessionConfig | None = None
    """The settings with every pending ``session.update`` applied (``None``: none pending)."""
    pending: OrderedDict[str, PendingRequest] = field(default_factory=OrderedDict)
    """Native request id → what the translation needs of its answer."""
    requests_sent: int = 0
    pending_outputs: OrderedDict[str, str] = field(default_factory=OrderedDict)
    """Call id → the native id of the ``tool.result`` sent for it, until applied."""
    ready_replies: list[dict[str, Any]] = field(default_factory=list)
    """Answers to client events that a session event made ready (sent after it)."""
    max_input_chars: int = 100_000
    """The session's bound on a user text (checked before an item is reported)."""
    max_append_bytes: int = MAX_APPEND_BYTES
    responses: dict[str, ResponseState] = field(default_factory=dict)
    items: OrderedDict[str, tuple[dict[str, Any], str | None]] = field(default_factory=OrderedDict)
    """Recent items by id, as last sent, with the id of the item before each."""
    item_sizes: dict[str, int] = field(default_factory=dict)
    """Item id → the characters of text it holds (what :data:`MAX_REMEMBERED_CHARS` counts)."""
    remembered_chars: int = 0
    item_responses: dict[str, str] = field(default_factory=dict)
    """Assistant item id → the native response that produced it."""
    last_item_id: str | None = None
    user_items: int = 0
    pending_user_item: str | None = None
    """The user item the speech in progress will become (named at speech_started)."""
    speaking: bool = False
    """Speech started and has not stopped."""
    speech_cleared: bool = False
    """The input audio was cleared while the client spoke: that speech's stop names no
    item (no turn is committed from it)."""
    transcript_item: str | None = None
    transcript_text: str = ""
    transcript_answered: bool = False
    """A response to the turn whose transcript is awaited has ended (a session without
    speech-to-text never gets one: the wait no longer keeps the stream from quiet)."""
    transcript_seconds: float = 0.0
    connection_events: int = 0
    connection_tag: str = ""
    """Set on a resumed connection (hex, no separator: the ids add their own), so its
    connection event ids and request ids differ from earlier ones."""
    written: tuple[int, int] = (0, 0)
    """(seq, k) of the last session event the connection wrote (or is writing): the
    point a connection event queued now follows on the wire."""

    def next_connection_event_id(self) -> str:
        """An id for an event that is not a native session event."""
        self.connection_events += 1
        return connection_event_id(self.written, self.connection_events, self.connection_tag)

    def send_request(self, request: PendingRequest) -> str:
        """Remember ``request`` until answered; the native id to send it with."""
        # Always the dialect's own, unique in the session (the tag differs per
        # connection): the core refuses a request id it has seen, and a Realtime
        # event_id is only a label (a client may number its events anew after a
        # reconnect). Errors name the client's event_id again (``answered``).
        self.requests_sent += 1
        tag = self.connection_tag + "_" if self.connection_tag else ""
        native_id = f"rt_{tag}{self.requests_sent}"
        self.pending[native_id] = request
        if len(self.pending) > MAX_PENDING_REQUESTS:
            # Never an update: its session.updated applies the oldest patch pending, and
            # would apply the next one's. Updates are at most half of them, so one is found.
            oldest = next(key for key, kept in self.pending.items() if kept.patch is None)
            del self.pending[oldest]
        return native_id

    def send_output(self, request: PendingRequest) -> str:
        """:meth:`send_request` for a ``function_call_output``, found again by call id."""
        native_id = self.send_request(request)
        assert request.call_id is not None
        self.pending_outputs[request.call_id] = native_id
        self.pending_outputs.move_to_end(request.call_id)
        while len(self.pending_outputs) > MAX_PENDING_REQUESTS:
            self.pending_outputs.popitem(last=False)
        return native_id

    def take_ready_replies(self) -> list[dict[str, Any]]:
        """The answers made ready since the last call, handed over once, with their ids
        (connection events that follow the session event written last)."""
        replies, self.ready_replies = self.ready_replies, []
        return [
            {"type": reply["type"], "event_id": self.next_connection_event_id()} | reply
            for reply in replies
        ]

    @property
    def pending_updates(self) -> int:
        """The ``session.update`` events awaiting their answer."""
        return sum(request.patch is not None for request in self.pending.values())

    @property
    def pending_update_chars(self) -> int:
        """The text held by the ``session.update`` events awaiting their answer."""
        return sum(request.size for request in self.pending.values())

    def answered(self, native_id: Any) -> PendingRequest | None:
        """Forget the pending request ``native_id`` names, returning it (if known)."""
        return self.pending.pop(native_id, None) if isinstance(native_id, str) else None

    @property
    def view(self) -> SessionConfig:
        """The settings a new ``session.update`` builds on: the requested ones."""
        return self.requested or self.config

    def next_user_item_id(self) -> str:
        """A fresh id for a user item the client created without naming it (never one
        of the items known: the client may have chosen it)."""
        self.user_items += 1
        while f"item_user_c{self.user_items}" in self.items:
            self.user_items += 1
        return f"item_user_c{self.user_items}"

    @property
    def quiet(self) -> bool:
        """No response, speech or transcript in progress: a point a resume can rebuild from."""
        return (
            not self.responses
            and self.pending_user_item is None
            and not self.speaking
            and (self.transcript_item is None or self.transcript_answered)
        )

    def remember(self, item: dict[str, Any], response_id: str | None = None) -> str | None:
        """Keep ``item`` (bounded); return the id of the item before it in the conversation."""
        item_id: str = item["id"]
        known = self.items.get(item_id)
        previous = known[1] if known is not None else self.last_item_id
        self.items[item_id] = (item, previous)
        self.items.move_to_end(item_id)
        size = text_chars(item)
        self.remembered_chars += size - self.item_sizes.get(item_id, 0)
        self.item_sizes[item_id] = size
        if known is None:
            self.last_item_id = item_id
        if response_id is not None:
            self.item_responses[item_id] = response_id
        while len(self.items) > MAX_REMEMBERED_ITEMS or (
            self.remembered_chars > MAX_REMEMBERED_CHARS and len(self.items) > 1
        ):
            old, _ = self.items.popitem(last=False)
            self.item_responses.pop(old, None)
            self.remembered_chars -= self.item_sizes.pop(old, 0)
        return previous


def text_chars(value: Any) -> int:
    """The characters of every string in a JSON-like ``value`` (an item is a few levels)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(key) + text_chars(inner) for key, inner in value.items())
    if isinstance(value, list):
        return sum(text_chars(inner) for inner in value)
    return 0
