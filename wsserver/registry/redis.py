"""Worker registry in Redis: which workers are live, and where each session lives.

Keys:

* ``wss:worker:<id>``  string: the worker's :class:`WorkerInfo` as JSON, expiring after
  ``ttl`` unless the worker publishes again (its heartbeat)
* ``wss:workers``      set: ids of workers that published; an id whose key expired is
  pruned by the next :meth:`WorkerRegistry.live`

A session's owner is the session store's lease key ``wss:{<session-id>}:lease``
(see ``wsserver.store.redis``): the router reads it, never writes it.

Like the session store, every call has a bounded timeout and no retries, so a router
whose Redis is down learns it at once and keeps routing from what it last knew.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from wsserver.store.redis import deliver_swallowed_cancel

T = TypeVar("T")

WORKERS_KEY = "wss:workers"

# Remove ids from the set only if their key is still missing: a worker that published
# again between our MGET and this call must not vanish until its next heartbeat.
_PRUNE = """
local removed = 0
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 0 then
    removed = removed + redis.call('SREM', ARGV[1], ARGV[i + 1])
  end
end
return removed
"""


class RegistryError(Exception):
    """Base of the registry's errors."""


class RegistryUnavailable(RegistryError):
    """Redis did not answer in time, or refused the call."""


def worker_key(worker_id: str) -> str:
    """The key holding one worker's :class:`WorkerInfo`."""
    return f"wss:worker:{worker_id}"


def lease_key(session_id: str) -> str:
    """The session store's owner lease of a session (same layout as ``store.redis``)."""
    return "wss:{" + session_id + "}:lease"


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


def rendezvous_order(key: str, workers: Sequence[WorkerInfo]) -> list[WorkerInfo]:
    """``workers`` by highest random weight for ``key``, best first.

    Deterministic, and stable under membership changes: removing a worker moves only
    the keys that ranked it first; every other key keeps its first choice. The NUL
    separator keeps ``("ab", "c")`` and ``("a", "bc")`` apart.
    """

    def score(worker: WorkerInfo) -> tuple[bytes, str]:
        digest = hashlib.sha256(f"{key}\0{worker.worker_id}".encode()).digest()
        return digest, worker.worker_id

    return sorted(workers, key=score, reverse=True)


def placement_order(
    key: str, workers: Sequence[WorkerInfo], owner: str | None = None
) -> list[WorkerInfo]:
    """The workers to try for ``key``, best first.

    Draining workers never take a connection. Full workers come after every worker
    with room — not never: their session count is a heartbeat old, and they answer
    503 themselves if still full. The session's live owner goes first regardless, as
    resuming there takes no new room and needs no takeover.
    """
    ranked = rendezvous_order(key, [w for w in workers if not w.draining])
    ranked = [w for w in ranked if not w.full] + [w for w in ranked if w.full]
    owners = [w for w in ranked if w.worker_id == owner]
    return owners + [w for w in ranked if w.worker_id != owner]


class WorkerRegistry:
    """Publish workers, list the live ones, look up a session's owner."""

    def __init__(self, redis_url: str, *, ttl: float = 6.0, timeout: float = 0.5) -> None:
        self.ttl = ttl
        self.redis: Redis = Redis.from_url(
            redis_url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            retry_on_timeout=False,
            decode_responses=False,
        )
        self._prune = self.redis.register_script(_PRUNE)

    async def _call(self, operation: Callable[[], Awaitable[T]]) -> T:
        try:
            result = await operation()
        except (RedisError, OSError, TimeoutError) as exc:
            deliver_swallowed_cancel()
            raise RegistryUnavailable(f"redis: {exc}") from exc
        deliver_swallowed_cancel()
        return result

    async def publish(self, info: WorkerInfo) -> None:
        """Announce (or refresh) ``info``; it lapses ``ttl`` seconds after the last call."""

        async def run() -> None:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.set(
                    worker_key(info.worker_id), info.to_json(), px=max(1, int(self.ttl * 1000))
                )
                pipe.sadd(WORKERS_KEY, info.worker_id)
                await pipe.execute()

        await self._call(run)

    async def withdraw(self, worker_id: str) -> None:
        """Remove a worker at once (clean shutdown) instead of waiting for its ttl."""

        async def run() -> None:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.delete(worker_key(worker_id))
                pipe.srem(WORKERS_KEY, worker_id)
                await pipe.execute()

        await self._call(run)

    async def live(self) -> list[WorkerInfo]:
        """Every worker whose publication has not expired, sorted by id."""
        ids = await self._call(lambda: self.redis.smembers(WORKERS_KEY))
        if not ids:
            return []
        ordered = sorted(_text(worker_id) for worker_id in ids)
        keys = [worker_key(worker_id) for worker_id in ordered]
        values = await self._call(lambda: self.redis.mget(keys))
        workers: list[WorkerInfo] = []
        expired: list[tuple[str, str]] = []
        for key, worker_id, raw in zip(keys, ordered, values, strict=True):
            if raw is None:
                expired.append((key, worker_id))
                continue
            try:
                workers.append(WorkerInfo.from_json(raw))
            except ValueError:
                continue  # a foreign or half-written value: not a worker we can route to
        if expired:
            await self._call(
                lambda: self._prune(
                    keys=[key for key, _ in expired],
                    args=[WORKERS_KEY, *(worker_id for _, worker_id in expired)],
                )
            )
        return workers

    async def owner_of(self, session_id: str) -> str | None:
        """The worker id holding the session's lease, or None (no session, lease lapsed)."""
        raw = await self._call(lambda: self.redis.get(lease_key(session_id)))
        return _text(raw) if raw else None

    async def close(self) -> None:
        await self.redis.aclose()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
