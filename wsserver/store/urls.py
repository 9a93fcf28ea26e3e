"""The store URLs that name a Redis, kept apart so choosing a store imports no client."""

from __future__ import annotations

CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")
"""URL schemes that name a seed node of a Redis Cluster."""

REDIS_SCHEMES = ("redis://", "rediss://", "unix://", *CLUSTER_SCHEMES)
"""Every URL scheme the Redis store and registry accept."""

REDIS_URL_FORMS = "redis://HOST:PORT/DB or redis+cluster://HOST:PORT"
"""How an error message names them."""
