"""One way to talk to Redis, shared by the session store and the worker registry.

Both open their connection here, with the same policy: every call has a bounded
timeout (``timeout`` seconds to connect, and again to answer) and no retries, so a
worker or router whose Redis is down learns it at once and decides for itself (keep
streaming from memory, refuse new sessions, route from the last list) instead of
hanging behind reconnect attempts. A ``redis+cluster://HOST:PORT`` (or
``rediss+cluster://``) URL names one seed node of a Redis Cluster and selects the
``redis`` package's own cluster client, which finds the other nodes and follows the
slots as they move. Library errors are translated here, at the
boundary, into the caller's own "unavailable" exception, and a cancellation that
redis-py swallowed is delivered again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterPipeline, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from wsserver.store.urls import CLUSTER_SCHEMES

T = TypeVar("T")


def deliver_swallowed_cancel() -> None:
    """Raise the cancellation redis-py swallowed, if it did.

    redis.asyncio sometimes absorbs a task's ``CancelledError`` mid-command and returns
    normally (seen with redis 8.1 in about 3 of 4 cancels; redis/redis-py#2028 and kin).
    A loop around such a call would then never end, and whoever awaits it (a router's
    or worker's shutdown) hangs. A cancel that was requested and not uncancelled is
    still counted by ``Task.cancelling()``: deliver it here.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class RedisClient:
    """A Redis connection with bounded calls that fail as ``unavailable``."""

    def __init__(
        self, url: str, *, timeout: float, unavailable: Callable[[str], Exception]
    ) -> None:
        self.cluster = url.startswith(CLUSTER_SCHEMES)
        """Whether this is a Redis Cluster (every multi-key call stays in one slot)."""
        self.redis: Redis | RedisCluster
        if self.cluster:
            # No retries here either: a failed node's call fails at once, and the
            # client maps the slots again on the next call (after a failover).
            self.redis = RedisCluster.from_url(
                url.replace("+cluster", "", 1),
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 0),
                decode_responses=False,
            )
        else:
            self.redis = Redis.from_url(
                url,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 0),
                retry_on_timeout=False,
                decode_responses=False,
            )
        self._unavailable = unavailable
        self.round_trips = 0
        """Calls that went to Redis (a pipeline counts once)."""

    def script(self, source: str) -> AsyncScript:
        """A Lua script, sent by hash (and loaded on first use)."""
        return self.redis.register_script(source)

    async def queue_script(
        self,
        pipe: Pipeline | ClusterPipeline,
        script: AsyncScript,
        keys: Sequence[str],
        args: Sequence[Any],
    ) -> None:
        """Add one run of ``script`` to a pipeline.

        A cluster pipeline refuses EVALSHA (a node that lacks the script could not load
        it mid-pipeline, and a promoted replica starts with an empty script cache), so
        there the script's source goes with each call (EVAL); a single Redis gets the
        hash, loaded before the pipeline runs.
        """
        if isinstance(pipe, ClusterPipeline):
            pipe.eval(cast(str, script.script), len(keys), *keys, *args)  # ours are str
        else:
            await script(keys=keys, args=args, client=pipe)

    async def call(self, operation: Callable[[], Awaitable[T]]) -> T:
        """Run one round trip; a Redis, socket or timeout error becomes ``unavailable``."""
        self.round_trips += 1
        try:
            result = await operation()
        except (RedisError, OSError, TimeoutError) as exc:
            deliver_swallowed_cancel()
            raise self._unavailable(f"redis: {exc}") from exc
        deliver_swallowed_cancel()
        return result

    async def close(self) -> None:
        """Close the connection pool."""
        await self.redis.aclose()
