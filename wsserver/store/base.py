"""The session store interface: what must outlive a connection, and a worker.

A worker keeps each live session's runtime in memory; the store keeps the
session record (resume token hash, owner and fencing epoch, a snapshot of the
conversation and stream state), the replay log, the usage ledger, and the
tool-call ledger (each call emitted to the client, and its one result). The
memory store serves one process; the Redis store lets any worker resume any
session.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import math
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol

from protocol.usage import Usage


class SessionStoreError(Exception):
    """Base class of store failures."""


class SessionStoreUnavailable(SessionStoreError):
    """The store cannot be reached (or answered too slowly)."""


class StoredDataUnreadable(SessionStoreError):
    """What the store holds for a session does not read back: damaged, half written,
    or laid out by another version. Never retried: reading it again gives the same."""


class UnknownStore(SessionStoreError, ValueError):
    """A store URL that names no store this server has."""


RESUME_TOKEN_PREFIX = "wrt_"
"""Marks resume tokens, so a log filter can recognise and redact them."""


def new_resume_token() -> str:
    """A random resume token (256 bits)."""
    return RESUME_TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """Stored form of a resume token: only its hash is kept."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(token: str, token_hash: str) -> bool:
    """Constant-time comparison of a presented token against a stored hash."""
    return hmac.compare_digest(hash_token(token), token_hash)


@dataclass(slots=True)
class ResponseUsage:
    """Usage of one response, with how it ended."""

    response_id: str
    status: str
    reason: str | None
    usage: Usage

    def to_json(self) -> str:
        """Serialized ledger entry."""
        data = asdict(self)
        data["usage"] = self.usage.to_dict()
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str | bytes) -> ResponseUsage:
        """Inverse of :meth:`to_json`.

        Raises ``ValueError``, ``KeyError`` or ``RecursionError`` for an entry that is
        not one: every field is checked, so a damaged entry never reaches the sums.
        """
        data = json.loads(raw)
        if type(data) is not dict:
            raise ValueError("a usage entry is a JSON object")
        response_id, status, reason = data["response_id"], data["status"], data["reason"]
        counts = data["usage"]
        if type(response_id) is not str or type(status) is not str:
            raise ValueError("a usage entry's response id and status are text")
        if reason is not None and type(reason) is not str:
            raise ValueError("a usage entry's reason is text or null")
        if (
            type(counts) is not dict
            or not set(counts) <= _USAGE_COUNTS
            or not all(
                type(count) is int and 0 <= count <= MAX_USAGE_COUNT for count in counts.values()
            )
        ):
            raise ValueError("a usage entry's counts are whole numbers of its known kinds")
        return cls(response_id, status, reason, Usage(**counts))


MAX_USAGE_COUNT = 2**63 - 1
"""The most a usage entry counts of anything: far above any response; a sum of a whole
ledger of such counts still prints (Python refuses to print integers of 4300+ digits)."""

_USAGE_COUNTS = frozenset(item.name for item in fields(Usage))
"""The counts a usage entry may hold."""


def ledger_totals(entries: Sequence[ResponseUsage]) -> Usage:
    """Session usage: the sum over its responses."""
    total = Usage()
    for entry in entries:
        total.add(entry.usage)
    return total


class ToolCallStatus(enum.StrEnum):
    """Where a tool call stands in the session's ledger."""

    PENDING = "pending"
    """Emitted to the client, no result yet."""
    COMPLETED = "completed"
    """A result was applied."""
    TIMED_OUT = "timed_out"
    """No result within the timeout; closed."""
    CANCELLED = "cancelled"
    """Closed without a result (e.g. the session ended)."""


CLOSED_STATUSES = frozenset({ToolCallStatus.TIMED_OUT, ToolCallStatus.CANCELLED})
"""The statuses :meth:`SessionStore.close_tool_call` may close a call with."""


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call the model asked the client to run, and its outcome."""

    call_id: str
    response_id: str
    name: str
    arguments: str
    """The call's JSON arguments, as text."""
    status: ToolCallStatus = ToolCallStatus.PENDING
    output: str | None = None
    """The result's output (text; JSON text is fine)."""
    error: str | None = None
    """The result's error message, if the tool failed."""
    created_at: float = 0.0
    """Unix time."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "call_id": self.call_id,
            "response_id": self.response_id,
            "name": self.name,
            "arguments": self.arguments,
            "status": self.status.value,
            "output": self.output,
            "error": self.error,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCallRecord:
        """Inverse of :meth:`to_dict`.

        Raises ``KeyError``, ``TypeError`` or ``ValueError`` for a field that is missing
        or not of its type: a stored entry is checked here, so that whoever adopts the
        call can trust its fields.
        """
        texts = [data["call_id"], data["response_id"], data["name"], data["arguments"]]
        optional = [data.get("output"), data.get("error")]
        if not all(type(value) is str for value in texts) or not all(
            value is None or type(value) is str for value in optional
        ):
            raise TypeError("a tool call's ids, name, arguments and outcome are text")
        created_at = data.get("created_at", 0.0)
        if type(created_at) not in (int, float) or not math.isfinite(created_at):
            raise TypeError("a tool call's created_at is a finite number")
        return cls(
            call_id=texts[0],
            response_id=texts[1],
            name=texts[2],
            arguments=texts[3],
            status=ToolCallStatus(data.get("status", ToolCallStatus.PENDING)),
            output=optional[0],
            error=optional[1],
            created_at=float(created_at),
        )


class ToolResultOutcome(enum.StrEnum):
    """What :meth:`SessionStore.apply_tool_result` did with a result."""

    APPLIED = "applied"
    """First result for a pending call: recorded now."""
    DUPLICATE = "duplicate"
    """The call already has a result: this one is ignored, the stored one stands."""
    CLOSED = "closed"
    """The call timed out or was cancelled before a result came."""
    UNKNOWN = "unknown"
    """No such call in this session (or no such session)."""


def check_close_status(status: ToolCallStatus) -> None:
    """Refuse to close a call with anything but a closed status."""
    if status not in CLOSED_STATUSES:
        raise ValueError(f"a tool call closes as timed_out or cancelled, not {status.value}")


@dataclass(slots=True)
class SessionRecord:
    """What the store knows about a session."""

    session_id: str
    token_hash: str
    created_at: float
    epoch: int = 1
    owner: str | None = None
    owner_live: bool = False
    """Whether the owner's lease was still running when this record was read."""
    conversation: dict[str, Any] = field(default_factory=dict)
    stream: dict[str, Any] = field(default_factory=dict)
    partial_text: str = ""
    """Persisted text of the latest response (its deltas, concatenated)."""
    principal: str = "anonymous"
    """Who opened the session: only this principal may resume it."""


@dataclass(slots=True)
class AppendBatch:
    """One session's events and state to persist in one scripted call."""

    session_id: str
    epoch: int
    owner: str
    events: list[tuple[int, bytes]]
    stream: dict[str, Any]
    conversation: dict[str, Any] | None = None
    partial_reset: bool = False
    partial_append: str = ""
    partial_offset: int | None = None
    """UTF-8 bytes the stored partial text holds before ``partial_append`` (0 after a
    reset; None: unknown, append). A batch sent again after an unanswered write then
    lands at the same place instead of adding its text twice, and one whose earlier
    text the store lost (a Redis failover) leaves the shorter stored text, a true
    prefix, as it is."""
    usage: list[ResponseUsage] = field(default_factory=list)
    """Ledger entries to add, with the events in one step: dropped if the epoch is
    stale (the new owner ends every response whose done the store lacks, and records
    it: one entry per response), kept if the session is gone (the ledger outlives it)."""
    remove: bool = False
    """The session ended: after this batch, delete it (the usage ledger stays)."""
    acked_seq: int = 0
    """The client has every event up to this seq (the replay buffer forgot them): the
    stored log drops them too, so a takeover restores the acked point with the log, as
    the buffer has it. (The Realtime dialect acks only quiet points, which its rebuild
    starts from; a log trimmed by its bounds alone could start inside an answer.)"""


@dataclass(slots=True)
class AppendResult:
    """Sessions whose batch was refused."""

    stale: set[str] = field(default_factory=set)
    """Another worker owns them now (their epoch moved on)."""
    gone: set[str] = field(default_factory=set)
    """The store no longer has them (expired, or the store lost its data)."""
    unwritten: set[str] = field(default_factory=set)
    """Not written this time: their part of the store was unreachable (one Redis
    Cluster shard down while the others answer); send them again later."""
    refused: dict[str, str] = field(default_factory=dict)
    """Not written: the store refused their own batch (what it holds for them is
    damaged, so their script failed), with its error; the others' batches count."""


@dataclass(slots=True)
class LogSlice:
    """Persisted events after a seq, and the oldest seq the log still holds."""

    first_seq: int
    events: list[tuple[int, bytes]]


class SessionStore(Protocol):
    """Where session records, replay logs, usage and tool calls live."""

    shared: bool
    """Whether other processes see the same sessions."""

    async def create(self, record: SessionRecord) -> None:
        """Register a new session (epoch 1, owned by ``record.owner``)."""
        ...

    async def get(self, session_id: str) -> SessionRecord | None:
        """A session's record, or ``None`` if unknown or expired.

        Raises :class:`StoredDataUnreadable` for a record that does not read back.
        """
        ...

    async def claim(self, session_id: str, owner: str) -> SessionRecord | None:
        """Take a session over: bump its epoch, make ``owner`` the owner.

        Returns the record as of the takeover (``owner``/``owner_live`` describe
        the previous owner), or ``None`` if the session is gone. Raises
        :class:`StoredDataUnreadable` for a record that does not read back.
        """
        ...

    async def append(self, batches: Sequence[AppendBatch]) -> AppendResult:
        """Persist batches in one round trip; says which sessions were refused."""
        ...

    async def read_log(self, session_id: str, after_seq: int) -> LogSlice:
        """Persisted events with seq > ``after_seq``.

        Raises :class:`StoredDataUnreadable` for a log that does not read back at all
        (an entry that does not is the reader's to judge: stored_log.py).
        """
        ...

    async def renew(self, leases: Sequence[tuple[str, int, str]]) -> AppendResult:
        """Keep (session, epoch, owner) leases and TTLs alive; says which were refused."""
        ...

    async def remove(self, session_id: str, epoch: int) -> None:
        """End a session; its usage ledger stays, its tool-call ledger goes with it."""
        ...

    async def record_usage(self, session_id: str, entry: ResponseUsage) -> None:
        """Append a response's usage to the session's ledger."""
        ...

    async def usage(self, session_id: str) -> list[ResponseUsage]:
        """The session's ledger (also after the session ended).

        A damaged entry is left out; a ledger that does not read back at all (its key
        of another type) raises :class:`StoredDataUnreadable`."""
        ...

    async def add_tool_calls(self, session_id: str, calls: Sequence[ToolCallRecord]) -> None:
        """Record calls emitted to the client, as pending, in the given order.

        Idempotent by ``call_id``: a call already in the ledger keeps its place,
        status and result. The given records' ``status``/``output``/``error`` are
        not used (a call starts pending). A session the store no longer has
        records nothing: its ledger has gone with it. The ledger lives as long
        as the session record, and goes when the session is removed or expires.
        """
        ...

    async def apply_tool_result(
        self, session_id: str, call_id: str, output: str | None, error: str | None
    ) -> tuple[ToolResultOutcome, ToolCallRecord | None]:
        """Record a call's result, exactly once, atomically.

        A pending call becomes completed with ``output``/``error``
        (``APPLIED``); a completed one keeps its first result (``DUPLICATE``);
        a timed-out or cancelled one stays closed (``CLOSED``). When several
        workers race with the same result, exactly one gets ``APPLIED``.
        Returns the record as stored after the call, or ``None`` with
        ``UNKNOWN`` when the session has no such call.
        """
        ...

    async def close_tool_call(self, session_id: str, call_id: str, status: ToolCallStatus) -> bool:
        """Close a pending call without a result (``TIMED_OUT`` or ``CANCELLED``).

        Atomic with :meth:`apply_tool_result`: a call ends with either a result
        or a close, never both. Returns ``False`` when the call was not pending
        (it has a result, was closed already, or is unknown). Raises
        ``ValueError`` for any other ``status``.
        """
        ...

    async def tool_calls(self, session_id: str) -> list[ToolCallRecord]:
        """Every call of the session, in the order they were added.

        A damaged entry is left out; a ledger that does not read back at all raises
        :class:`StoredDataUnreadable`."""
        ...

    async def use_client_token(self, token_id: str, limit: int, ttl: float) -> bool:
        """Count one session opened with a client token; False when ``limit`` is reached.

        Atomic across workers; the count lives ``ttl`` seconds (the token's life).
        """
        ...

    async def ready(self) -> bool:
        """Whether the store can serve requests now."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


@dataclass(frozen=True, slots=True)
class StoreLimits:
    """Retention of the replay log and records."""

    log_max_events: int = 4096
    log_max_bytes: int = 1 << 20
    resume_window: float = 120.0
    """Seconds the replay log lives after the session's last activity."""
    session_ttl: float = 3600.0
    """Seconds the record (and its snapshot) lives after the last activity."""
    lease_ttl: float = 10.0
    """Seconds an owner's lease lasts without renewal."""
    usage_ttl: float = 7 * 24 * 3600.0
    """Seconds the usage ledger is kept."""
