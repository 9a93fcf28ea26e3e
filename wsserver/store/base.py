"""The session store interface: durable facts about sessions, shared by workers.

A worker keeps each live session's runtime in memory; the store keeps what must
outlive a connection (and, with a shared backend, a worker): the resume token
hash and the usage ledger.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import Protocol

from protocol.usage import Usage


class SessionStoreError(Exception):
    """Base class of store failures."""


class SessionStoreUnavailable(SessionStoreError):
    """The store cannot be reached."""


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


@dataclass(slots=True)
class SessionRecord:
    """What the store knows about a session."""

    session_id: str
    token_hash: str
    created_at: float
    responses: list[ResponseUsage] = field(default_factory=list)

    def totals(self) -> Usage:
        """Session usage: the sum over its responses."""
        total = Usage()
        for entry in self.responses:
            total.add(entry.usage)
        return total


class SessionStore(Protocol):
    """Where session records and usage live."""

    async def create(self, record: SessionRecord) -> None:
        """Register a new session."""
        ...

    async def get(self, session_id: str) -> SessionRecord | None:
        """A session's record, or ``None`` if unknown or expired."""
        ...

    async def remove(self, session_id: str) -> None:
        """Forget a session (expired or closed)."""
        ...

    async def record_usage(self, session_id: str, entry: ResponseUsage) -> None:
        """Append a response's usage to the session's ledger."""
        ...

    async def ready(self) -> bool:
        """Whether the store can serve requests now."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...
