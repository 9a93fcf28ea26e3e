"""Realtime client events, validated with pydantic (the GA shapes the SDK sends).

Every field the SDK's ``*Param`` types allow is declared, so an event the SDK can
send is never refused for its shape; whether a field is honoured is decided in
:mod:`.client_events`. Unknown fields are refused, as the Realtime API refuses them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

_Id = Annotated[str, Field(min_length=1, max_length=128)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class _Event(_Model):
    event_id: Any = None
    """Echoed in an ``error`` only when it is a short valid string (checked by the caller)."""


class AudioFormat(_Model):
    """``audio/pcm`` at 24 kHz is the only format served."""

    type: Literal["audio/pcm", "audio/pcmu", "audio/pcma"] = "audio/pcm"
    rate: int | None = None


class ServerVad(_Model):
    """Server VAD as the Realtime API configures it."""

    type: Literal["server_vad", "semantic_vad"]
    threshold: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    prefix_padding_ms: Annotated[int, Field(ge=0, le=2000)] | None = None
    silence_duration_ms: Annotated[int, Field(ge=100, le=5000)] | None = None
    create_response: bool | None = None
    interrupt_response: bool | None = None
    idle_timeout_ms: int | None = None
    eagerness: str | None = None


class Transcription(_Model):
    """Input transcription settings (an STT stage in the worker transcribes)."""

    model: Annotated[str, Field(max_length=128)] | None = None
    language: Annotated[str, Field(max_length=32)] | None = None
    prompt: Annotated[str, Field(max_length=4096)] | None = None
    languages: Any = None
    keywords: Any = None
    delay: Any = None


class AudioInput(_Model):
    """``session.audio.input``."""

    format: AudioFormat | None = None
    turn_detection: ServerVad | None = None
    transcription: Transcription | None = None
    noise_reduction: Any = None


class AudioOutput(_Model):
    """``session.audio.output``."""

    format: AudioFormat | None = None
    voice: Any = None
    speed: Annotated[float, Field(gt=0, le=4)] | None = None


class AudioConfig(_Model):
    """``session.audio``."""

    input: AudioInput | None = None
    output: AudioOutput | None = None


class FunctionTool(_Model):
    """A function tool (``RealtimeFunctionToolParam``); MCP tools are not served."""

    type: Literal["function"] = "function"
    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


Modalities = Annotated[list[Literal["text", "audio"]], Field(min_length=1, max_length=1)]
MaxTokens = Annotated[int, Field(ge=1, le=1_000_000)] | Literal["inf"]


class Session(_Model):
    """The ``session`` of ``session.update`` (every field optional)."""

    type: Literal["realtime"] = "realtime"
    model: Annotated[str, Field(max_length=128)] | None = None
    instructions: Annotated[str, Field(max_length=100_000)] | None = None
    output_modalities: Modalities | None = None
    tools: Annotated[list[FunctionTool], Field(max_length=128)] | None = None
    tool_choice: Any = None
    max_output_tokens: MaxTokens | None = None
    audio: AudioConfig | None = None
    parallel_tool_calls: bool | None = None
    include: Any = None
    prompt: Any = None
    reasoning: Any = None
    tracing: Any = None
    truncation: Any = None


class SessionUpdate(_Event):
    """``session.update``."""

    type: Literal["session.update"]
    session: Session


class ContentPart(_Model):
    """A content part of a message item the client creates."""

    type: Literal["input_text", "input_audio", "input_image", "output_text", "output_audio"]
    text: str | None = None
    audio: str | None = None
    transcript: str | None = None
    image_url: str | None = None
    detail: str | None = None


class Item(_Model):
    """An item the client adds to the conversation."""

    type: Literal["message", "function_call", "function_call_output"]
    id: Annotated[str, Field(max_length=32, pattern=r"^[A-Za-z0-9_-]+$")] | None = None
    object: Literal["realtime.item"] | None = None
    status: Literal["completed", "incomplete", "in_progress"] | None = None
    role: Literal["user", "assistant", "system"] | None = None
    content: Annotated[list[ContentPart], Field(max_length=64)] | None = None
    call_id: _Id | None = None
    name: str | None = None
    arguments: str | None = None
    output: str | None = None


class ItemCreate(_Event):
    """``conversation.item.create``."""

    type: Literal["conversation.item.create"]
    item: Item
    previous_item_id: str | None = None


class ItemTruncate(_Event):
    """``conversation.item.truncate``."""

    type: Literal["conversation.item.truncate"]
    item_id: _Id
    content_index: Annotated[int, Field(ge=0)]
    audio_end_ms: Annotated[int, Field(ge=0)]


class ItemDelete(_Event):
    """``conversation.item.delete``."""

    type: Literal["conversation.item.delete"]
    item_id: _Id


class ItemRetrieve(_Event):
    """``conversation.item.retrieve``."""

    type: Literal["conversation.item.retrieve"]
    item_id: _Id


class AudioAppend(_Event):
    """``input_audio_buffer.append``: base64 PCM16 mono at 24 kHz."""

    type: Literal["input_audio_buffer.append"]
    audio: str


class AudioCommit(_Event):
    """``input_audio_buffer.commit``."""

    type: Literal["input_audio_buffer.commit"]


class AudioClear(_Event):
    """``input_audio_buffer.clear``."""

    type: Literal["input_audio_buffer.clear"]


class ResponseParams(_Model):
    """``response.create``'s per-response overrides."""

    instructions: Annotated[str, Field(max_length=100_000)] | None = None
    output_modalities: Modalities | None = None
    max_output_tokens: MaxTokens | None = None
    tools: Annotated[list[FunctionTool], Field(max_length=128)] | None = None
    tool_choice: Any = None
    conversation: str | None = None
    input: Any = None
    metadata: Any = None
    audio: Any = None
    parallel_tool_calls: bool | None = None
    prompt: Any = None
    reasoning: Any = None


class ResponseCreate(_Event):
    """``response.create``."""

    type: Literal["response.create"]
    response: ResponseParams | None = None


class ResponseCancel(_Event):
    """``response.cancel``."""

    type: Literal["response.cancel"]
    response_id: _Id | None = None


class OutputAudioClear(_Event):
    """``output_audio_buffer.clear``."""

    type: Literal["output_audio_buffer.clear"]


ClientEvent = Annotated[
    SessionUpdate
    | ItemCreate
    | ItemTruncate
    | ItemDelete
    | ItemRetrieve
    | AudioAppend
    | AudioCommit
    | AudioClear
    | ResponseCreate
    | ResponseCancel
    | OutputAudioClear,
    Field(discriminator="type"),
]

CLIENT_EVENT_TYPES = frozenset(
    {
        "session.update",
        "conversation.item.create",
        "conversation.item.truncate",
        "conversation.item.delete",
        "conversation.item.retrieve",
        "input_audio_buffer.append",
        "input_audio_buffer.commit",
        "input_audio_buffer.clear",
        "response.create",
        "response.cancel",
        "output_audio_buffer.clear",
    }
)
