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
    netloc = urlsplit(url).netloc.rpartition("@")[2]
    seeds: list[tuple[str, int]] = []
    for seed in netloc.split(","):
        host, _, port = seed.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"not a HOST:PORT seed node: {seed!r}")
        seeds.append((host.strip("[]"), int(port)))
    return seeds
