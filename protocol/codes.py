"""Close-code and error-code registry.

Every code says what a client should do about it: reconnect and resume the
session, or treat it as terminal. Codes are data, so documentation, the SDK's
reconnect decision and the server all read the same table.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Disposition(enum.Enum):
    """What a client should do after seeing a code."""

    RESUME = "resume"
    """Reconnect (with backoff) and resume the session from the last seen seq."""

    TERMINAL = "terminal"
    """Do not retry the same thing: the session, or the request, cannot go on as it was."""


@dataclass(frozen=True, slots=True)
class CloseCodeInfo:
    """One WebSocket close code and what it means for the client."""

    code: int
    name: str
    disposition: Disposition
    description: str


class CloseCode(enum.IntEnum):
    """WebSocket close codes the server sends (and 1006, which a client observes)."""

    NORMAL = 1000
    GOING_AWAY = 1001
    PROTOCOL_ERROR = 1002
    ABNORMAL = 1006
    INVALID_PAYLOAD = 1007
    POLICY_VIOLATION = 1008
    MESSAGE_TOO_BIG = 1009
    INTERNAL_ERROR = 1011
    SERVICE_RESTART = 1012
    TRY_AGAIN_LATER = 1013
    SLOW_CONSUMER = 4000
    HANDSHAKE_TIMEOUT = 4001
    SESSION_REPLACED = 4002
    SESSION_MOVED = 4003
    SESSION_CLOSED = 4004
    FLOOD = 4005
    RATE_LIMITED = 4010
    CONNECTION_LIMIT_REACHED = 4011
    UNAUTHORIZED = 4401
    FORBIDDEN = 4403


CLOSE_CODES: dict[int, CloseCodeInfo] = {
    info.code: info
    for info in (
        CloseCodeInfo(1000, "normal", Disposition.TERMINAL, "the session ended normally"),
        CloseCodeInfo(
            1001, "going_away", Disposition.RESUME, "the server is shutting down; resume elsewhere"
        ),
        CloseCodeInfo(
            1002,
            "protocol_error",
            Disposition.TERMINAL,
            "the client broke the WebSocket framing rules (closed by the WebSocket layer)",
        ),
        CloseCodeInfo(
            1006,
            "abnormal",
            Disposition.RESUME,
            "the connection dropped without a close frame (observed by the client, never sent)",
        ),
        CloseCodeInfo(
            1007,
            "invalid_payload",
            Disposition.TERMINAL,
            "a text frame was not valid UTF-8 (closed by the WebSocket layer)",
        ),
        CloseCodeInfo(
            1008,
            "policy_violation",
            Disposition.TERMINAL,
            "the client broke a protocol rule that cannot be answered in-band",
        ),
        CloseCodeInfo(
            1009, "message_too_big", Disposition.TERMINAL, "a frame exceeded the size limit"
        ),
        CloseCodeInfo(
            1011, "internal_error", Disposition.RESUME, "the server hit an unexpected error"
        ),
        CloseCodeInfo(
            1012, "service_restart", Disposition.RESUME, "the worker is draining; resume elsewhere"
        ),
        CloseCodeInfo(
            1013, "try_again_later", Disposition.RESUME, "the worker is at capacity; retry later"
        ),
        CloseCodeInfo(
            4000,
            "slow_consumer",
            Disposition.RESUME,
            "the client read too slowly and its outbox passed the hard bound; resume",
        ),
        CloseCodeInfo(
            4001,
            "handshake_timeout",
            Disposition.RESUME,
            "no session.start or session.resume arrived in time",
        ),
        CloseCodeInfo(
            4002,
            "session_replaced",
            Disposition.TERMINAL,
            "another connection resumed this session; this one is obsolete",
        ),
        CloseCodeInfo(
            4003,
            "session_moved",
            Disposition.RESUME,
            "the session is now owned by another worker; resume there",
        ),
        CloseCodeInfo(
            4004,
            "session_closed",
            Disposition.TERMINAL,
            "the session was closed or expired on the server",
        ),
        CloseCodeInfo(
            4005, "flood", Disposition.TERMINAL, "the client sent messages faster than allowed"
        ),
        CloseCodeInfo(
            4010,
            "rate_limited",
            Disposition.RESUME,
            "the principal's connections together sent messages faster than allowed; resume "
            "after retry_after_ms (in the reason)",
        ),
        CloseCodeInfo(
            4011,
            "connection_limit_reached",
            Disposition.RESUME,
            "the client's address or principal holds too many connections; retry later",
        ),
        CloseCodeInfo(
            4401,
            "unauthorized",
            Disposition.TERMINAL,
            "the connection's credential expired before it opened or resumed a session; "
            "connect again with a fresh one",
        ),
        CloseCodeInfo(
            4403,
            "forbidden",
            Disposition.TERMINAL,
            "the connection's credential may not do this (a client token that may not open "
            "sessions, or has opened all it may)",
        ),
    )
}


def close_disposition(code: int | None) -> Disposition:
    """What a client should do after the connection closed with ``code``.

    ``None`` (no close frame at all) and unknown codes mean the transport
    failed, so the client should try to resume.
    """
    if code is None:
        return Disposition.RESUME
    info = CLOSE_CODES.get(code)
    if info is not None:
        return info.disposition
    # 1002/1003/1007 and other protocol-level failures are the client's own bug.
    if code in (1002, 1003, 1007, 1010):
        return Disposition.TERMINAL
    return Disposition.RESUME


@dataclass(frozen=True, slots=True)
class ErrorCodeInfo:
    """One in-band error code (the ``code`` field of an ``error`` event)."""

    code: str
    disposition: Disposition
    description: str


class ErrorCode(enum.StrEnum):
    """In-band error codes carried by ``error`` events."""

    INVALID_JSON = "invalid_json"
    INVALID_MSGPACK = "invalid_msgpack"
    INVALID_FRAME = "invalid_frame"
    UNKNOWN_TYPE = "unknown_type"
    MISSING_FIELD = "missing_field"
    INVALID_FIELD = "invalid_field"
    UNKNOWN_FIELD = "unknown_field"
    NO_SESSION = "no_session"
    SESSION_ALREADY_OPEN = "session_already_open"
    NO_ACTIVE_RESPONSE = "no_active_response"
    RESPONSE_IN_PROGRESS = "response_in_progress"
    NOTHING_TO_ANSWER = "nothing_to_answer"
    UNKNOWN_SESSION = "unknown_session"
    INVALID_RESUME_TOKEN = "invalid_resume_token"
    REPLAY_UNAVAILABLE = "replay_unavailable"
    INVALID_SEQ = "invalid_seq"
    INPUT_TOO_LONG = "input_too_long"
    CANNOT_CONTINUE = "cannot_continue"
    STORE_UNAVAILABLE = "store_unavailable"
    AUDIO_NOT_ENABLED = "audio_not_enabled"
    INVALID_AUDIO = "invalid_audio"
    AUDIO_TOO_FAST = "audio_too_fast"
    AUDIO_BUFFER_FULL = "audio_buffer_full"
    NOTHING_TO_COMMIT = "nothing_to_commit"
    UNKNOWN_RESPONSE = "unknown_response"
    UNKNOWN_TOOL_CALL = "unknown_tool_call"
    DUPLICATE_REQUEST = "duplicate_request"
    TOOL_CALL_CLOSED = "tool_call_closed"
    INVALID_SCHEMA = "invalid_schema"
    INTERNAL_ERROR = "internal_error"
    SESSION_LIMIT_REACHED = "session_limit_reached"
    TOO_MANY_FAILED_RESUMES = "too_many_failed_resumes"


ERROR_CODES: dict[str, ErrorCodeInfo] = {
    info.code: info
    for info in (
        ErrorCodeInfo(
            "invalid_json",
            Disposition.TERMINAL,
            "a text frame is not valid JSON: a syntax error, NaN or Infinity, a lone surrogate "
            "escape (invalid text), or nesting deeper than 64 levels",
        ),
        ErrorCodeInfo(
            "invalid_msgpack",
            Disposition.TERMINAL,
            "a binary frame is not a valid msgpack map: a format error, a string that is not "
            "UTF-8, or nesting deeper than 64 levels",
        ),
        ErrorCodeInfo(
            "invalid_frame",
            Disposition.TERMINAL,
            "a frame of the wrong kind for the negotiated encoding, or a bad audio frame header",
        ),
        ErrorCodeInfo("unknown_type", Disposition.TERMINAL, "the message type is not known"),
        ErrorCodeInfo("missing_field", Disposition.TERMINAL, "a required field is missing"),
        ErrorCodeInfo(
            "invalid_field",
            Disposition.TERMINAL,
            "a field has the wrong type or value, or holds what is not JSON data (bytes, ext "
            "types, non-string keys, non-finite numbers, integers beyond 64 bits, more than "
            "100,000 values)",
        ),
        ErrorCodeInfo("unknown_field", Disposition.TERMINAL, "the message has an unknown field"),
        ErrorCodeInfo(
            "no_session",
            Disposition.TERMINAL,
            "the message needs a session; send session.start or session.resume first",
        ),
        ErrorCodeInfo(
            "session_already_open",
            Disposition.TERMINAL,
            "this connection already carries a session",
        ),
        ErrorCodeInfo(
            "no_active_response",
            Disposition.TERMINAL,
            "there is no response to interrupt or cancel",
        ),
        ErrorCodeInfo(
            "response_in_progress",
            Disposition.TERMINAL,
            "a response is already running; interrupt or cancel it first",
        ),
        ErrorCodeInfo(
            "nothing_to_answer",
            Disposition.TERMINAL,
            "response.create without input while the conversation has no user turn or tool "
            "result to answer",
        ),
        ErrorCodeInfo(
            "unknown_session",
            Disposition.TERMINAL,
            "no such session (never existed or expired); start a new one",
        ),
        ErrorCodeInfo(
            "invalid_resume_token",
            Disposition.TERMINAL,
            "the resume token does not match; start a new session",
        ),
        ErrorCodeInfo(
            "replay_unavailable",
            Disposition.TERMINAL,
            "events after last_seq are no longer buffered; start a new session",
        ),
        ErrorCodeInfo(
            "invalid_seq", Disposition.TERMINAL, "last_seq or ack seq is ahead of the server"
        ),
        ErrorCodeInfo(
            "input_too_long", Disposition.TERMINAL, "the input exceeds the session's limits"
        ),
        ErrorCodeInfo(
            "cannot_continue",
            Disposition.TERMINAL,
            "response.continue names a response that is not the latest unfinished one",
        ),
        ErrorCodeInfo(
            "store_unavailable",
            Disposition.RESUME,
            "the session store cannot be reached; retry (with backoff) later",
        ),
        ErrorCodeInfo(
            "audio_not_enabled",
            Disposition.TERMINAL,
            "an audio frame or audio message in a session started without audio",
        ),
        ErrorCodeInfo(
            "invalid_audio",
            Disposition.TERMINAL,
            "an audio chunk outside 10-100 ms at the session's sample rate; the chunk is dropped",
        ),
        ErrorCodeInfo(
            "audio_too_fast",
            Disposition.RESUME,
            "audio arrives faster than real time beyond the allowed burst; chunks are dropped "
            "until the client is back to real-time pace",
        ),
        ErrorCodeInfo(
            "audio_buffer_full",
            Disposition.TERMINAL,
            "the uncommitted input turn reached its length limit; commit or clear it",
        ),
        ErrorCodeInfo(
            "nothing_to_commit", Disposition.TERMINAL, "input_audio.commit with no buffered audio"
        ),
        ErrorCodeInfo(
            "unknown_response",
            Disposition.TERMINAL,
            "the response id is neither the running nor the latest response",
        ),
        ErrorCodeInfo(
            "duplicate_request",
            Disposition.TERMINAL,
            "a response.create or response.continue whose id already started a response "
            "(a resend after a reconnect): nothing new starts; response_id names it",
        ),
        ErrorCodeInfo(
            "unknown_tool_call",
            Disposition.TERMINAL,
            "tool.result names a call this session never emitted",
        ),
        ErrorCodeInfo(
            "tool_call_closed",
            Disposition.TERMINAL,
            "tool.result for a call that timed out; the result is not applied",
        ),
        ErrorCodeInfo(
            "invalid_schema",
            Disposition.TERMINAL,
            "a tool's parameters or a response_format schema is not a valid JSON Schema,"
            " refers outside itself, or is past the schema limits",
        ),
        ErrorCodeInfo(
            "internal_error", Disposition.RESUME, "the server failed to handle the message"
        ),
        ErrorCodeInfo(
            "session_limit_reached",
            Disposition.RESUME,
            "session.start while the client's principal or address already has its most "
            "concurrent sessions on this worker; end one, or retry later",
        ),
        ErrorCodeInfo(
            "too_many_failed_resumes",
            Disposition.RESUME,
            "session.resume refused unchecked: too many wrong tokens or unknown sessions from "
            "this principal or address; retry after the error's retry_after_ms",
        ),
    )
}

assert set(ERROR_CODES) == {c.value for c in ErrorCode}, "error registry out of sync"
assert set(CLOSE_CODES) == {c.value for c in CloseCode}, "close registry out of sync"
