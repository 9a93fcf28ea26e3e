"""Times a session store's calls and counts their errors, without touching its code.

Each timed operation of the store object is replaced, on that one instance, by a
coroutine that awaits the original and observes how long it took: the store classes
stay free of metrics, and any store (memory, Redis, Redis Cluster) is timed alike.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import Any

from prometheus_client import Counter, Histogram

from wsserver.metrics.labels import STORE_OPERATIONS


def time_store_calls(store: Any, latency: Histogram, errors: Counter) -> None:
    """Wrap each of ``store``'s :data:`STORE_OPERATIONS` it has (once per instance)."""
    if getattr(store, "_metrics_timed", False):
        return
    for operation in STORE_OPERATIONS:
        method = getattr(store, operation, None)
        if method is not None:
            setattr(store, operation, _timed(method, operation, latency, errors))
    store._metrics_timed = True


def _timed(
    method: Callable[..., Awaitable[Any]], operation: str, latency: Histogram, errors: Counter
) -> Callable[..., Awaitable[Any]]:
    observe = latency.labels(operation).observe
    unavailable = errors.labels(operation, "unavailable")
    other = errors.labels(operation, "other")

    @functools.wraps(method)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        start = perf_counter()
        try:
            return await method(*args, **kwargs)
        except Exception as exc:
            # By name: this package imports nothing of wsserver.store.
            names = {cls.__name__ for cls in type(exc).__mro__}
            (unavailable if "SessionStoreUnavailable" in names else other).inc()
            raise
        finally:
            observe(perf_counter() - start)

    return timed
