"""Open the session store named by a URL."""

from __future__ import annotations

from wsserver.store.base import SessionStore, StoreLimits, UnknownStore
from wsserver.store.memory import MemorySessionStore
from wsserver.store.urls import CLUSTER_SCHEMES, REDIS_SCHEMES, REDIS_URL_FORMS, cluster_seeds


def open_store(
    url: str,
    limits: StoreLimits,
    *,
    timeout: float = 0.5,
    max_connections: int | None = None,
) -> SessionStore:
    """``memory``, ``redis://HOST:PORT/DB`` (``rediss://`` for TLS) or a Redis Cluster's
    seed node ``redis+cluster://HOST:PORT`` (``rediss+cluster://``); else
    :class:`UnknownStore`. ``max_connections``: see
    :class:`wsserver.store.redis_client.RedisClient`."""
    if url == "memory":
        return MemorySessionStore(limits)
    if url.startswith(CLUSTER_SCHEMES):
        try:
            cluster_seeds(url)
        except ValueError as exc:
            raise UnknownStore(f"bad redis cluster url: {exc}") from None
    if url.startswith(REDIS_SCHEMES):
        from wsserver.store.redis import RedisSessionStore

        return RedisSessionStore(url, limits, timeout=timeout, max_connections=max_connections)
    raise UnknownStore(f"unknown store {url!r}: use 'memory', {REDIS_URL_FORMS}")
