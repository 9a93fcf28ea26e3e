"""The store URLs that name a Redis, kept apart so choosing a store imports no client."""

from __future__ import annotations

from urllib.parse import urlsplit

CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")
"""URL schemes that name a seed node of a Redis Cluster."""

REDIS_SCHEMES = ("redis://", "rediss://", "unix://", *CLUSTER_SCHEMES)
"""Every URL scheme the Redis store and registry accept."""

REDIS_URL_FORMS = "redis://HOST:PORT/DB or redis+cluster://HOST:PORT[,HOST:PORT...]"
"""How an error message names them."""


def cluster_seeds(url: str) -> list[tuple[str, int]]:
    """The seed nodes of ``redis+cluster://[user:password@]HOST:PORT[,HOST:PORT...]``.

    Name several: a client that starts while its only seed is down (a failed primary
    not yet restarted) cannot find the cluster.
    """
    parts = urlsplit(url)
    if parts.path not in ("", "/", "/0"):
        # A cluster serves database 0 only: another number would not keep data apart.
        raise ValueError(f"a redis cluster has database 0 only, not {parts.path[1:]!r}")
    netloc = parts.netloc.rpartition("@")[2]  # never the credentials in a message
    seeds: list[tuple[str, int]] = []
    for seed in netloc.split(","):
        host, _, port = seed.rpartition(":")
        # ASCII digits in the port range: str.isdigit also takes other scripts' digits.
        if not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
            raise ValueError(f"not a HOST:PORT seed node: {seed!r}")
        seeds.append((host.strip("[]"), int(port)))
    return seeds


def printable_store_url(url: str) -> str:
    """``url`` as a banner may show it: no user, password or query (redis-py takes a
    ``?password=`` from the query, so it is a credential too)."""
    parts = urlsplit(url)
    if not parts.scheme:
        return url  # "memory", or something the selector will refuse by name
    netloc = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{netloc}{parts.path}"
