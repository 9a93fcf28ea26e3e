"""Client → server messages, validated with pydantic.

Inbound traffic is low-rate control, so a pydantic model per message is cheap
and buys precise validation. Before any model sees a message, the whole of it is
checked to be JSON data (:mod:`protocol.json_value`): free-form fields such as a
tool's ``parameters``, a ``response_format`` schema or a ``tool.result`` ``output``
can then hold nothing that fails to re-encode, store or reach the engine. Outbound
events (one per token) are plain dicts built in :mod:`protocol.events`; no model is
constructed on that path.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.json_value import NotJsonData, check_json_data, is_valid_text, safe_text

MAX_ID_LENGTH = 128


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: Annotated[str, Field(max_length=MAX_ID_LENGTH)] | None = None
    """Optional client-chosen request id, echoed in any ``error`` it causes."""


ToolRounds = Literal["server", "client"]
"""``server``: a response that calls tools waits for every result and generates again
(one ``response.done``); ``client``: it ends at once (``reason: tool_calls``), and the
client's next ``response.create`` answers with the results."""

MAX_INSTRUCTIONS = 100_000


class SessionSettings(BaseModel):
    """Per-session settings a client may choose at ``session.start``."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    max_output_tokens: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    tool_timeout_ms: Annotated[int, Field(ge=100, le=3_600_000)] | None = None
    """How long a response waits for its tool results (default: the server's)."""
    tool_rounds: ToolRounds | None = None
    """Who starts a tool loop's next round (default ``server``; see :data:`ToolRounds`)."""


class ToolSpec(BaseModel):
    """A tool the model may call; the client runs it and sends the result."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]
    description: Annotated[str, Field(max_length=4096)] = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """JSON Schema of the call's arguments (an object); JSON data, like every field."""


MAX_TOOLS = 128


class ResponseFormat(BaseModel):
    """Ask for output that is JSON matching a schema (structured output)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    type: Literal["json_schema"]
    schema_: dict[str, Any] = Field(alias="schema")
    name: Annotated[str, Field(max_length=64)] | None = None


class TurnDetection(BaseModel):
    """How the user's turns are found in the input audio."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    type: Literal["server_vad", "manual"] = "server_vad"
    """``server_vad``: the server detects speech and commits turns after silence;
    ``manual``: the client commits (``input_audio.commit`` or a chunk flagged last)."""
    threshold: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    prefix_padding_ms: Annotated[int, Field(ge=0, le=2000)] = 300
    silence_duration_ms: Annotated[int, Field(ge=100, le=5000)] = 500
    create_response: bool = True
    """Start a response by itself when a turn is committed (and nothing is running)."""
    interrupt_response: bool = True
    """Barge-in: speech while a response runs interrupts it."""
    false_interruption_ms: Annotated[int, Field(ge=100, le=5000)] | None = None
    """Speech shorter than this is no turn (a cough); an answer it interrupted is
    continued from where playback stopped. Off when absent."""


class AudioSettings(BaseModel):
    """Voice for a session: PCM16 mono in both directions at one sample rate."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    sample_rate: Literal[16000, 24000] = 16000
    output: bool = True
    """Whether responses carry audio as well as text."""
    turn_detection: TurnDetection = TurnDetection()


class SessionStart(_Message):
    """Open a new session on this connection."""

    type: Literal["session.start"]
    instructions: Annotated[str, Field(max_length=MAX_INSTRUCTIONS)] | None = None
    settings: SessionSettings | None = None
    audio: AudioSettings | None = None
    """Enable audio input (binary frames) and output; absent for a text-only session."""
    tools: Annotated[list[ToolSpec], Field(max_length=MAX_TOOLS)] | None = None


class SessionUpdate(_Message):
    """Change the session's settings; the next response (or round, or turn) sees them.

    Every field is optional, and absent means unchanged; at least one is required.
    """

    type: Literal["session.update"]
    tools: Annotated[list[ToolSpec], Field(max_length=MAX_TOOLS)] | None = None
    """Replace the session's tools (``[]``: none)."""
    instructions: Annotated[str, Field(max_length=MAX_INSTRUCTIONS)] | None = None
    """Replace the instructions (``""`` clears them)."""
    audio: AudioSettings | None = None
    """Replace the audio settings whole; a text session becomes a voice session. The
    sample rate of a session that has audio cannot change."""
    tool_rounds: ToolRounds | None = None


class SessionResume(_Message):
    """Re-attach to an existing session and receive the events after ``last_seq``."""

    type: Literal["session.resume"]
    session_id: Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)]
    resume_token: Annotated[str, Field(min_length=1, max_length=256)]
    last_seq: Annotated[int, Field(ge=0)]


class InputText(_Message):
    """Append a user turn to the conversation."""

    type: Literal["input.text"]
    text: Annotated[str, Field(min_length=1)]


class ResponseCreate(_Message):
    """Start generating an answer (optionally adding a user turn first)."""

    type: Literal["response.create"]
    input: Annotated[str, Field(min_length=1)] | None = None
    max_output_tokens: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    response_format: ResponseFormat | None = None
    instructions: Annotated[str, Field(max_length=MAX_INSTRUCTIONS)] | None = None
    """This response's instructions, instead of the session's (``""``: none)."""
    tools: Annotated[list[ToolSpec], Field(max_length=MAX_TOOLS)] | None = None
    """This response's tools, in all its rounds, instead of the session's (``[]``: none)."""
    audio_output: bool | None = None
    """Speak this answer (default: the session's ``audio.output``); a voice session only."""


class ResponseContinue(_Message):
    """Continue an unfinished response (failed, incomplete, interrupted) from its delivered text."""

    type: Literal["response.continue"]
    response_id: Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)]
    max_output_tokens: Annotated[int, Field(ge=1, le=1_000_000)] | None = None


class ResponseInterrupt(_Message):
    """Stop the running response; keep only what the client rendered or played."""

    type: Literal["response.interrupt"]
    response_id: Annotated[str, Field(max_length=MAX_ID_LENGTH)] | None = None
    rendered_chars: Annotated[int, Field(ge=0)] | None = None
    """Characters of the response's text the client actually showed."""
    played_ms: Annotated[int, Field(ge=0)] | None = None
    """Milliseconds of the response's audio the client actually played."""


class ResponseCancel(_Message):
    """Stop the running response and drop it from the conversation."""

    type: Literal["response.cancel"]
    response_id: Annotated[str, Field(max_length=MAX_ID_LENGTH)] | None = None


class InputAudioCommit(_Message):
    """Make the buffered input audio a user turn now."""

    type: Literal["input_audio.commit"]


class InputAudioClear(_Message):
    """Drop the buffered, uncommitted input audio."""

    type: Literal["input_audio.clear"]


class OutputAudioPlayed(_Message):
    """Playback progress: how much of a response's audio the user has heard."""

    type: Literal["output_audio.played"]
    response_id: Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)]
    played_ms: Annotated[int, Field(ge=0)]


class ToolResult(_Message):
    """The result of a tool call the client ran (idempotent by ``call_id``)."""

    type: Literal["tool.result"]
    call_id: Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)]
    output: Any = None
    """Any JSON value the tool returned (JSON data: see :mod:`protocol.json_value`)."""
    error: Annotated[str, Field(max_length=4096)] | None = None
    """Set when the tool failed; the model sees it instead of an output."""


class Ack(_Message):
    """The client has every event up to and including ``seq``; the server may forget them."""

    type: Literal["ack"]
    seq: Annotated[int, Field(ge=0)]


class Ping(_Message):
    """Application-level round trip; answered with ``pong``."""

    type: Literal["ping"]


ClientMessage = Annotated[
    SessionStart
    | SessionResume
    | InputText
    | ResponseCreate
    | ResponseContinue
    | ResponseInterrupt
    | ResponseCancel
    | InputAudioCommit
    | InputAudioClear
    | OutputAudioPlayed
    | SessionUpdate
    | ToolResult
    | Ack
    | Ping,
    Field(discriminator="type"),
]

CLIENT_MESSAGE_TYPES: frozenset[str] = frozenset(
    {
        "session.start",
        "session.resume",
        "input.text",
        "response.create",
        "response.continue",
        "response.interrupt",
        "response.cancel",
        "input_audio.commit",
        "input_audio.clear",
        "output_audio.played",
        "session.update",
        "tool.result",
        "ack",
        "ping",
    }
)

_adapter: TypeAdapter[ClientMessage] = TypeAdapter(ClientMessage)

# pydantic error types → our codes. Anything unlisted is an invalid field.
_MISSING = {"missing"}
_EXTRA = {"extra_forbidden"}


def parse_client_message(obj: Any) -> ClientMessage:
    """Validate a decoded frame into a client message.

    Raises :class:`ProtocolViolation` with the most specific error code.
    """
    if not isinstance(obj, dict):
        raise ProtocolViolation(ErrorCode.INVALID_FIELD, "a message must be an object")
    msg_type = obj.get("type")
    raw_id = obj.get("id")
    # An over-long id, or one that is not valid text, is itself invalid: never echo it back.
    request_id = (
        raw_id
        if type(raw_id) is str and len(raw_id) <= MAX_ID_LENGTH and is_valid_text(raw_id)
        else None
    )
    if msg_type is None:
        raise ProtocolViolation(ErrorCode.MISSING_FIELD, "missing field 'type'", request_id)
    if type(msg_type) is not str:
        raise ProtocolViolation(
            ErrorCode.UNKNOWN_TYPE, "the message type must be a string", request_id
        )
    if msg_type not in CLIENT_MESSAGE_TYPES:
        raise ProtocolViolation(
            ErrorCode.UNKNOWN_TYPE, f"unknown message type {safe_text(msg_type)!r}", request_id
        )
    try:
        check_json_data(obj)
    except NotJsonData as exc:
        raise ProtocolViolation(
            ErrorCode.INVALID_FIELD, f"invalid field '{exc.where}': {exc.reason}", request_id
        ) from None
    try:
        return _adapter.validate_python(obj)
    except ValidationError as exc:
        raise _violation_from(exc, request_id) from None


def _violation_from(exc: ValidationError, request_id: str | None) -> ProtocolViolation:
    first = exc.errors(include_url=False, include_input=False)[0]
    # loc is (type-tag, field, ...) for a discriminated union; drop the tag.
    # Keys come from the client (an unknown field's name): bounded before they are echoed.
    loc = [safe_text(str(p), 40) for p in first["loc"][1:]]
    where = ".".join(loc) or "message"
    if first["type"] in _MISSING:
        return ProtocolViolation(ErrorCode.MISSING_FIELD, f"missing field '{where}'", request_id)
    if first["type"] in _EXTRA:
        return ProtocolViolation(ErrorCode.UNKNOWN_FIELD, f"unknown field '{where}'", request_id)
    return ProtocolViolation(
        ErrorCode.INVALID_FIELD, f"invalid field '{where}': {first['msg'].lower()}", request_id
    )
