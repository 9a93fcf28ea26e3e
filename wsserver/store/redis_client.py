"""One way to talk to Redis, shared by the session store and the worker registry.

Both open their connection here, with the same policy: every call has a bounded
timeout (``timeout`` seconds to connect, and again to answer) and no retries, so a
worker or router whose Redis is down learns it at once and decides for itself (keep
streaming from memory, refuse new sessions, route from the last list) instead of
hanging behind reconnect attempts. A ``redis+cluster://HOST:PORT[,HOST:PORT...]``
(or ``rediss+cluster://``) URL names seed nodes of a Redis Cluster and selects the
``redis`` package's own cluster client, which finds the other nodes and follows the
slots as they move. Library errors are translated here, at the
boundary, into the caller's own "unavailable" exception, and a cancellation that
redis-py swallowed is delivered again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast
from urllib.parse import unquote, urlsplit

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterNode, ClusterPipeline, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import RedisClusterException, RedisError, ResponseError, SlotNotCoveredError

from wsserver.store.urls import CLUSTER_SCHEMES, cluster_seeds

T = TypeVar("T")

# A cluster client's own failures (no reachable seed, a slot no node serves) are not
# RedisErrors.
FAILURES = (RedisError, RedisClusterException, OSError, TimeoutError)


def is_command_error(error: BaseException | None) -> bool:
    """Whether ``error`` is a command's or script's failure on the keys it touched (a
    key of the wrong type, a field that is not a number): a plain error reply, the
    same however often it is sent. The store's own failures (read-only after a
    failover, busy, cluster down, redirections) have their own types."""
    return type(error) is ResponseError


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


_UNBOUNDED_POOL = 2**31


class RedisClient:
    """A Redis connection with bounded calls that fail as ``unavailable``.

    ``max_connections`` bounds the calls in flight at once to one Redis node (``None``:
    no bound), and so the connections the pool opens to it: a single Redis, or each node
    of a cluster apart (a stalled primary holds its own calls only). A call beyond it
    waits for one to end, at most ``timeout`` seconds, then fails as ``unavailable``
    like a Redis that did not answer. A cluster client also keeps the connection it read
    the slot map on, and health checks (calls without a key) wait for no limit.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float,
        unavailable: type[Exception],
        max_connections: int | None = None,
    ) -> None:
        self.cluster = url.startswith(CLUSTER_SCHEMES)
        """Whether this is a Redis Cluster (every multi-key call stays in one slot)."""
        self.redis: Redis | RedisCluster
        if self.cluster:
            # No retries here either: a failed node's call fails at once, and the
            # client maps the slots again on the next call (after a failover).
            seeds = urlsplit(url)
            self.redis = RedisCluster(
                startup_nodes=[ClusterNode(host, port) for host, port in cluster_seeds(url)],
                username=unquote(seeds.username) if seeds.username else None,
                password=unquote(seeds.password) if seeds.password else None,
                ssl=url.startswith("rediss"),
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 0),
                decode_responses=False,
                max_connections=_UNBOUNDED_POOL,  # per node; as below
            )
        else:
            self.redis = Redis.from_url(
                url,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 0),
                retry_on_timeout=False,
                decode_responses=False,
                # The pool's own bound (100 by default in redis 8) fails a call past it
                # ("Too many connections") instead of waiting: the bound is ours, above.
                max_connections=_UNBOUNDED_POOL,
            )
        self._unavailable = unavailable
        self._timeout = timeout
        self.max_connections = max_connections
        self._slots: dict[str, asyncio.Semaphore] = {}
        """Per node (its name; a single Redis is ``""``): the calls it may still take."""
        self._mapping = asyncio.Lock()
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

    async def call(self, operation: Callable[[], Awaitable[T]], key: str | None = None) -> T:
        """Run one round trip; a Redis, socket or timeout error becomes ``unavailable``.

        ``key`` (one the call touches; all of them share its slot) names the node whose
        connections the call counts against; without one (a health check) it waits for
        none.
        """
        if self.max_connections is None or key is None:
            return await self._run(operation)
        slots = self._slots_of(await self._node_of(key))
        if slots.locked():
            try:
                async with asyncio.timeout(self._timeout):
                    await slots.acquire()
            except TimeoutError:
                raise self._unavailable(
                    f"redis: all {self.max_connections} connections busy for {self._timeout} s"
                ) from None
        else:
            await slots.acquire()  # free: returns at once
        try:
            return await self._run(operation)
        finally:
            slots.release()

    async def _node_of(self, key: str) -> str:
        """The name of the node serving ``key`` (``""`` for a single Redis)."""
        if not isinstance(self.redis, RedisCluster):
            return ""
        try:
            await self._map_slots()
            node = self.redis.get_node_from_key(key)
            if node is None:
                raise SlotNotCoveredError(f"no node serves {key!r}")
        except FAILURES as exc:
            self._remap()
            deliver_swallowed_cancel()
            raise self._unavailable(f"redis: {exc}") from exc
        return node.name

    def _slots_of(self, node: str) -> asyncio.Semaphore:
        slots = self._slots.get(node)
        if slots is None:
            assert self.max_connections is not None
            slots = self._slots[node] = asyncio.Semaphore(self.max_connections)
        return slots

    async def _run(self, operation: Callable[[], Awaitable[T]]) -> T:
        self.round_trips += 1
        try:
            await self._map_slots()
            result = await operation()
        except FAILURES as exc:
            if not is_command_error(exc):  # a damaged key says nothing of the topology
                self._remap()
            deliver_swallowed_cancel()
            raise self._unavailable(f"redis: {exc}") from exc
        deliver_swallowed_cancel()
        return result

    async def by_node(
        self, keys: Sequence[str], operation: Callable[[list[int]], Awaitable[T]]
    ) -> list[tuple[list[int], T | None]]:
        """Run ``operation`` once per node, on the positions of ``keys`` that node serves.

        A single Redis is one node. On a cluster the calls run side by side, and one
        failed node (a primary failing over) leaves the others' writes done and known:
        its positions come back with ``None``, to be sent again later. (One pipeline
        over every node would raise for all of them, although the healthy nodes had
        applied their part, and a retry would apply it twice.) If every node failed,
        that is the store being ``unavailable``.
        """
        if not isinstance(self.redis, RedisCluster):
            return [
                (
                    list(range(len(keys))),
                    await self.call(
                        lambda: operation(list(range(len(keys)))), keys[0] if keys else None
                    ),
                )
            ]
        groups: dict[str, list[int]] = {}
        try:
            await self._map_slots()
            for position, key in enumerate(keys):
                node = self.redis.get_node_from_key(key)
                if node is None:
                    raise SlotNotCoveredError(f"no node serves {key!r}")
                groups.setdefault(node.name, []).append(position)
        except FAILURES as exc:
            self._remap()
            deliver_swallowed_cancel()
            raise self._unavailable(f"redis: {exc}") from exc

        async def one(positions: list[int]) -> T:
            return await self.call(lambda: operation(positions), keys[positions[0]])

        parts = list(groups.values())
        results = await asyncio.gather(*(one(part) for part in parts), return_exceptions=True)
        done: list[tuple[list[int], T | None]] = []
        for part, result in zip(parts, results, strict=True):
            if isinstance(result, self._unavailable):
                done.append((part, None))
            elif isinstance(result, BaseException):
                raise result
            else:
                done.append((part, result))
        if all(result is None for _, result in done):
            failure = next(r for r in results if isinstance(r, BaseException))
            raise failure
        return done

    async def _map_slots(self) -> None:
        """A cluster's slot map, read by one call while the others wait for it.

        redis-py 8.1 lets every call that finds the map unknown (a fresh client, or
        after :meth:`_remap`) start reading it: calls made meanwhile fail with
        "Connection closed by server" (50 at once on a fresh client, every time).
        """
        if isinstance(self.redis, RedisCluster) and self.redis._initialize:
            async with self._mapping:
                await self.redis.initialize()  # nothing to do if one before us did it
                self._forget_gone_nodes(self.redis)

    def _forget_gone_nodes(self, cluster: RedisCluster) -> None:
        """Drop the connection counts of nodes the new slot map leaves out (a failed
        primary, a node replaced under a new address): over a long life of failovers
        and rolling restarts they would pile up. Calls still holding one of them
        release it as ever; one that comes back later gets a fresh count."""
        if not self._slots:
            return
        serving = {node.name for node in cluster.get_primaries()}
        serving.update(node.name for node in cluster.get_replicas())
        for name in [name for name in self._slots if name not in serving]:
            del self._slots[name]

    @property
    def counted_nodes(self) -> frozenset[str]:
        """The nodes whose connections :meth:`call` counts (``""``: a single Redis)."""
        return frozenset(self._slots)

    def _remap(self) -> None:
        """After a failure, have the cluster client read the slot map again first.

        redis-py does so after a failed single command, but not after a pipeline's
        node failed: without this the client would go on sending a failed-over
        primary's slots to the dead node for good.
        """
        if isinstance(self.redis, RedisCluster):
            self.redis._initialize = True

    async def close(self) -> None:
        """Close the connection pool."""
        await self.redis.aclose()
