"""The Prometheus text format of one registry (``GET /metrics``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""``text/plain; version=0.0.4; charset=utf-8``."""


def render(registry: CollectorRegistry) -> bytes:
    """Every metric of ``registry`` in the text exposition format."""
    return generate_latest(registry)
