"""Open the worker registry named by a URL (the same URL as the session store's)."""

from __future__ import annotations

from wsserver.registry.base import UnknownRegistry, WorkerRegistry
from wsserver.store.base import SessionStore
from wsserver.store.urls import CLUSTER_SCHEMES, REDIS_SCHEMES, REDIS_URL_FORMS, cluster_seeds


def open_registry(
    url: str,
    *,
    ttl: float = 6.0,
    timeout: float = 0.5,
    sessions: SessionStore | None = None,
    max_connections: int | None = None,
) -> WorkerRegistry:
    """``memory`` (one process; owners read from ``sessions``), ``redis://HOST:PORT/DB``
    or ``redis+cluster://HOST:PORT``.

    A memory registry is only seen by its own process: a router, which runs apart
    from the workers, must name their Redis, so ``memory`` without ``sessions`` is
    refused (:class:`UnknownRegistry`, as is any other URL). ``max_connections``: see
    :class:`wsserver.store.redis_client.RedisClient`.
    """
    if url == "memory":
        if sessions is None:
            raise UnknownRegistry(
                "a memory registry serves one process: name the workers' store, "
                "redis://HOST:PORT/DB"
            )
        from wsserver.registry.memory import MemoryWorkerRegistry

        return MemoryWorkerRegistry(ttl=ttl, sessions=sessions)
    if url.startswith(CLUSTER_SCHEMES):
        try:
            cluster_seeds(url)
        except ValueError as exc:
            raise UnknownRegistry(f"bad redis cluster url: {exc}") from None
    if url.startswith(REDIS_SCHEMES):
        from wsserver.registry.redis import RedisWorkerRegistry

        return RedisWorkerRegistry(url, ttl=ttl, timeout=timeout, max_connections=max_connections)
    raise UnknownRegistry(f"unknown registry {url!r}: use 'memory', {REDIS_URL_FORMS}")
