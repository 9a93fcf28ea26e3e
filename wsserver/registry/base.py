"""The worker registry interface: which workers are live, and who owns a session.

Workers publish a :class:`WorkerInfo` every heartbeat and withdraw it on a clean
shutdown; an entry that is not refreshed lapses by itself, so a killed worker drops
out of every router's list without anyone cleaning up. Routers list the live
workers and look up a session's current owner (the session store's owner lease)
to place a connection. The memory registry serves one process; the Redis registry
is shared by the workers and routers of a deployment.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Protocol


class RegistryError(Exception):
    """Base of the registry's errors."""


class RegistryUnavailable(RegistryError):
    """The registry's backend did not answer in time, or refused the call."""


class UnknownRegistry(RegistryError, ValueError):
    """A URL that names no registry this server has (or one a router cannot share)."""


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker tells the routers about itself, every heartbeat."""

    worker_id: str
    url: str
    """Where the router connects: ``ws://host:port``."""
    capacity: int
    """Sessions the worker accepts; 0 = unlimited."""
    sessions: int
    """Sessions the worker holds now."""
    draining: bool
    """True once the worker stopped taking sessions (SIGTERM)."""
    updated_at: float
    """Wall-clock time of this publication (``time.time()``)."""

    @property
    def full(self) -> bool:
        """At capacity: a new session would be refused."""
        return self.capacity > 0 and self.sessions >= self.capacity

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) of :attr:`url`."""
        hostport = self.url.split("://", 1)[-1].split("/", 1)[0]
        host, _, port = hostport.rpartition(":")
        return host.strip("[]"), int(port)

    def to_json(self) -> str:
        """The entry as stored: compact JSON."""
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str | bytes) -> WorkerInfo:
        """Parse :meth:`to_json`'s output; ``ValueError`` when it is not a worker."""
        try:
            data: dict[str, Any] = json.loads(raw)
            return cls(
                worker_id=str(data["worker_id"]),
                url=str(data["url"]),
                capacity=int(data["capacity"]),
                sessions=int(data["sessions"]),
                draining=bool(data["draining"]),
                updated_at=float(data["updated_at"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"invalid worker info: {exc}") from exc


class WorkerRegistry(Protocol):
    """Publish workers, list the live ones, look up a session's owner.

    Every call may raise :class:`RegistryUnavailable`; callers keep what they last knew.
    """

    ttl: float
    """Seconds an entry lives after its last :meth:`publish`."""

    async def publish(self, info: WorkerInfo) -> None:
        """Announce (or refresh) ``info``; it lapses ``ttl`` seconds after the last call."""
        ...

    async def withdraw(self, worker_id: str) -> None:
        """Remove a worker at once (clean shutdown) instead of waiting for its ttl."""
        ...

    async def live(self) -> list[WorkerInfo]:
        """Every worker whose publication has not lapsed, sorted by id."""
        ...

    async def owner_of(self, session_id: str) -> str | None:
        """The worker id holding the session's lease, or None (no session, lease lapsed)."""
        ...

    async def close(self) -> None:
        """Release the backend's connections."""
        ...
