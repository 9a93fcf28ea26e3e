"""Bounded label values: whatever a client sends, a label takes one of a fixed set.

A label value never comes from a client unchecked (a session id, principal, address
or path as a label would make one time series per client and exhaust the scraper);
values outside each set below become ``other``.
"""

from __future__ import annotations

from protocol.codes import CLOSE_CODES, ErrorCode
from protocol.dialects.realtime.resume import REFUSAL_CODES as REALTIME_REFUSAL_CODES
from protocol.generation import FinishReason

OTHER = "other"

STATUSES = frozenset({"completed", "interrupted", "cancelled", "failed", "incomplete"})
"""``response.done`` statuses (``unknown`` when a response ended without one)."""

_STANDARD_CLOSES = frozenset({1000, 1001, 1002, 1003, 1005, 1006, 1007, 1008, 1009, 1011, 1013})
CLOSE_CODE_VALUES = frozenset(str(code) for code in (*_STANDARD_CLOSES, *CLOSE_CODES)) | frozenset(
    {OTHER}
)
"""Close codes by number: the registry of protocol/codes.py and the RFC 6455 ones."""

REASONS = (
    frozenset(
        {
            "client",
            "speech",
            "client_gone",
            "session_expired",
            "tool_timeout",
            "tool_calls",
            "internal_error",
            "resume_refused",
            "worker_draining",
            "worker_lost",
            "session_moved",
            "overloaded",
            "none",
            OTHER,
        }
    )
    | frozenset(reason.value for reason in FinishReason)
    | frozenset(info.name for info in CLOSE_CODES.values())
)
"""Why a response ended (``reason`` of ``response.done``): the core's and engines' names."""

STORE_OPERATIONS = (
    "create",
    "get",
    "claim",
    "append",
    "read_log",
    "renew",
    "remove",
    "record_usage",
    "usage",
    "add_tool_calls",
    "apply_tool_result",
    "close_tool_call",
    "tool_calls",
    "use_client_token",
    "ready",
)
"""The session store's operations that are timed (every call of the interface but close)."""

TOOL_OUTCOMES = ("emitted", "result", "error_result", "timed_out")
AUTH_REASONS = ("no_credentials", "invalid", "forbidden", "rate_limited", "origin")
RESUME_REFUSALS = frozenset(code.value for code in ErrorCode) | REALTIME_REFUSAL_CODES
"""A refused resume is labelled with its error code: the fixed enum of protocol/codes.py,
or one of the Realtime dialect's refusals of its resume headers."""


def close_code(code: int | None) -> str:
    """The label of a close code: its number if known, else ``other``."""
    text = str(code)
    return text if text in CLOSE_CODE_VALUES else OTHER


def status(value: str | None) -> str:
    """The label of a response status."""
    if value is None:
        return "unknown"
    return value if value in STATUSES else OTHER


def reason(value: str | None) -> str:
    """The label of a response's end reason."""
    if value is None:
        return "none"
    return value if value in REASONS else OTHER


def bounded(value: str, allowed: frozenset[str] | tuple[str, ...]) -> str:
    """``value`` if it is one of ``allowed``, else ``other``."""
    return value if value in allowed else OTHER


def auth_reason(status: int, message: str = "") -> str:
    """The label of a refusal before a session, from its HTTP status and message."""
    if status == 429:
        return "rate_limited"
    if status == 401:
        return "no_credentials" if message.startswith("no credentials") else "invalid"
    return "forbidden"
