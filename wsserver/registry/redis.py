"""Worker registry in Redis: which workers are live, and where each session lives.

Keys (one hash slot, thanks to the ``{registry}`` tag, so that the MGET of every
worker and the prune script run unchanged on Redis Cluster; the registry is a few
hundred small keys at most, so one slot holds it easily):

* ``wss:{registry}:worker:<id>``  string: the worker's :class:`WorkerInfo` as JSON,
  expiring after ``ttl`` unless the worker publishes again (its heartbeat)
* ``wss:{registry}:workers``      set: ids of workers that published; an id whose key
  expired is pruned by the next :meth:`RedisWorkerRegistry.live`

A session's owner is the session store's lease key (:func:`wsserver.store.redis_layout.
lease_key`): the router reads it, never writes it.

Like the session store, every call has a bounded timeout and no retries
(:mod:`wsserver.store.redis_client`), so a router whose Redis is down learns it at
once and keeps routing from what it last knew.
"""

from __future__ import annotations

from wsserver.registry.base import RegistryUnavailable, WorkerInfo
from wsserver.store.redis_client import RedisClient
from wsserver.store.redis_layout import lease_key, milliseconds

WORKERS_KEY = "wss:{registry}:workers"

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


def worker_key(worker_id: str) -> str:
    """The key holding one worker's :class:`WorkerInfo`."""
    return "wss:{registry}:worker:" + worker_id


class RedisWorkerRegistry:
    """The shared registry of a deployment's workers and routers."""

    def __init__(
        self,
        redis_url: str,
        *,
        ttl: float = 6.0,
        timeout: float = 0.5,
        max_connections: int | None = None,
    ) -> None:
        self.ttl = ttl
        self.client = RedisClient(
            redis_url,
            timeout=timeout,
            unavailable=RegistryUnavailable,
            max_connections=max_connections,
        )
        self.redis = self.client.redis
        self._prune = self.client.script(_PRUNE)

    async def publish(self, info: WorkerInfo) -> None:
        async def run() -> None:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.set(worker_key(info.worker_id), info.to_json(), px=milliseconds(self.ttl))
                pipe.sadd(WORKERS_KEY, info.worker_id)
                await pipe.execute()

        await self.client.call(run, WORKERS_KEY)

    async def withdraw(self, worker_id: str) -> None:
        async def run() -> None:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.delete(worker_key(worker_id))
                pipe.srem(WORKERS_KEY, worker_id)
                await pipe.execute()

        await self.client.call(run, WORKERS_KEY)

    async def live(self) -> list[WorkerInfo]:
        ids = await self.client.call(lambda: self.redis.smembers(WORKERS_KEY), WORKERS_KEY)
        if not ids:
            return []
        ordered = sorted(_text(worker_id) for worker_id in ids)
        keys = [worker_key(worker_id) for worker_id in ordered]
        values = await self.client.call(lambda: self.redis.mget(keys), WORKERS_KEY)
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
            await self.client.call(
                lambda: self._prune(
                    keys=[key for key, _ in expired],
                    args=[WORKERS_KEY, *(worker_id for _, worker_id in expired)],
                ),
                WORKERS_KEY,
            )
        return workers

    async def owner_of(self, session_id: str) -> str | None:
        key = lease_key(session_id)
        raw = await self.client.call(lambda: self.redis.get(key), key)
        return _text(raw) if raw else None

    async def close(self) -> None:
        await self.client.close()


def _text(value: bytes | str) -> str:
    # Bytes that are not UTF-8 (a key written by hand) read as a name no worker has:
    # never an exception on the router's placement path.
    return value.decode(errors="replace") if isinstance(value, bytes) else value
