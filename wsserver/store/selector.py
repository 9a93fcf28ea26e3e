"""Open the session store named by a URL."""

from __future__ import annotations

from wsserver.store.base import SessionStore, StoreLimits, UnknownStore
from wsserver.store.memory import MemorySessionStore


def open_store(url: str, limits: StoreLimits, *, timeout: float = 0.5) -> SessionStore:
    """``memory`` or ``redis://HOST:PORT/DB`` (``rediss://`` for TLS); else
    :class:`UnknownStore`."""
    if url == "memory":
        return MemorySessionStore(limits)
    if url.startswith(("redis://", "rediss://", "unix://")):
        from wsserver.store.redis import RedisSessionStore

        return RedisSessionStore(url, limits, timeout=timeout)
    raise UnknownStore(f"unknown store {url!r}: use 'memory' or redis://HOST:PORT/DB")
