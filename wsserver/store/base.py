"""The session store interface: what must outlive a connection, and a worker.

A worker keeps each live session's runtime in memory; the store keeps the
session record (resume token hash, owner and fencing epoch, a snapshot of the
conversation and stream state), the replay log, and the usage ledger. The
memory store serves one process; the Redis store lets any worker resume any
session.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from protocol.usage import Usage


class SessionStoreError(Exception):
    """Base class of store failures."""


class SessionStoreUnavailable(SessionStoreError):
    """The store cannot be reached (or answered too slowly)."""


def new_resume_token() -> str:
    """A random resume token (256 bits)."""
    return secrets.token_urlsafe(32)


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
        """Inverse of :meth:`to_json`."""
        data = json.loads(raw)
        return cls(data["response_id"], data["status"], data["reason"], Usage(**data["usage"]))


def ledger_totals(entries: Sequence[ResponseUsage]) -> Usage:
    """Session usage: the sum over its responses."""
    total = Usage()
    for entry in entries:
        total.add(entry.usage)
    return total


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
    usage: list[ResponseUsage] = field(default_factory=list)
    """Ledger entries to add (written even if the epoch turns out stale)."""
    remove: bool = False
    """The session ended: after this batch, delete it (the ledger stays)."""


@dataclass(slots=True)
class AppendResult:
    """Sessions whose batch was refused."""

    stale: set[str] = field(default_factory=set)
    """Another worker owns them now (their epoch moved on)."""
    gone: set[str] = field(default_factory=set)
    """The store no longer has them (expired, or the store lost its data)."""


@dataclass(slots=True)
class LogSlice:
    """Persisted events after a seq, and the oldest seq the log still holds."""

    first_seq: int
    events: list[tuple[int, bytes]]


class SessionStore(Protocol):
    """Where session records, replay logs and usage live."""

    shared: bool
    """Whether other processes see the same sessions."""

    async def create(self, record: SessionRecord) -> None:
        """Register a new session (epoch 1, owned by ``record.owner``)."""
        ...

    async def get(self, session_id: str) -> SessionRecord | None:
        """A session's record, or ``None`` if unknown or expired."""
        ...

    async def claim(self, session_id: str, owner: str) -> SessionRecord | None:
        """Take a session over: bump its epoch, make ``owner`` the owner.

        Returns the record as of the takeover (``owner``/``owner_live`` describe
        the previous owner), or ``None`` if the session is gone.
        """
        ...

    async def append(self, batches: Sequence[AppendBatch]) -> AppendResult:
        """Persist batches in one round trip; says which sessions were refused."""
        ...

    async def read_log(self, session_id: str, after_seq: int) -> LogSlice:
        """Persisted events with seq > ``after_seq``."""
        ...

    async def renew(self, leases: Sequence[tuple[str, int, str]]) -> AppendResult:
        """Keep (session, epoch, owner) leases and TTLs alive; says which were refused."""
        ...

    async def remove(self, session_id: str, epoch: int) -> None:
        """End a session; its usage ledger stays."""
        ...

    async def record_usage(self, session_id: str, entry: ResponseUsage) -> None:
        """Append a response's usage to the session's ledger."""
        ...

    async def usage(self, session_id: str) -> list[ResponseUsage]:
        """The session's ledger (also after the session ended)."""
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
