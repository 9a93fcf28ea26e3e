"""What the router's code calls; :data:`NO_ROUTER_METRICS` with ``--metrics off``."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry

from wsserver.metrics import labels
from wsserver.metrics.definitions import RouterMetricSet, router_metric_set

PLACEMENT_OUTCOMES = ("relayed", "worker_answer", "no_worker")
"""relayed: a worker took the upgrade (101); worker_answer: a worker's other verdict
(4xx) went to the client; no_worker: every candidate refused or was unreachable."""
PLACEMENT_FAILURES = ("refused", "unreachable")
DIRECTIONS = ("client_to_worker", "worker_to_client")


def _ignore(count: int) -> None:
    """A byte counter that counts nothing."""


class RouterMetrics:
    """The router's metrics with ``--metrics off``: every call does nothing."""

    enabled = False
    registry: CollectorRegistry | None = None

    def placed(self, outcome: str) -> None:
        """An upgrade found its answer (see :data:`PLACEMENT_OUTCOMES`)."""

    def placement_failed(self, kind: str) -> None:
        """A candidate worker did not take a connection (refused 503, or unreachable)."""

    def auth_refused(self, reason: str) -> None:
        """A request was refused before any worker was contacted."""

    def byte_counter(self, direction: str) -> Callable[[int], None]:
        """What a relay pump calls with each chunk's size (pre-bound: once per chunk)."""
        return _ignore


NO_ROUTER_METRICS = RouterMetrics()


class _LiveRouterMetrics(RouterMetrics):
    enabled = True

    def __init__(self, metric_set: RouterMetricSet) -> None:
        self.set = metric_set
        self.registry = metric_set.registry
        self._bytes = {d: metric_set.relayed_bytes.labels(d).inc for d in DIRECTIONS}
        for outcome in PLACEMENT_OUTCOMES:  # zeros from the start: rate() needs a baseline
            metric_set.placed.labels(outcome)
        for kind in PLACEMENT_FAILURES:
            metric_set.placement_failures.labels(kind)

    def placed(self, outcome: str) -> None:
        self.set.placed.labels(labels.bounded(outcome, PLACEMENT_OUTCOMES)).inc()

    def placement_failed(self, kind: str) -> None:
        self.set.placement_failures.labels(labels.bounded(kind, PLACEMENT_FAILURES)).inc()

    def auth_refused(self, reason: str) -> None:
        self.set.auth_refusals.labels(labels.bounded(reason, labels.AUTH_REASONS)).inc()

    def byte_counter(self, direction: str) -> Callable[[int], None]:
        return self._bytes[direction]


def router_metrics(enabled: bool = True) -> RouterMetrics:
    """The metrics of one router: live ones in a registry of their own, or the no-op twin."""
    return _LiveRouterMetrics(router_metric_set()) if enabled else NO_ROUTER_METRICS
