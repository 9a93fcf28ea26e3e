"""The worker's metrics: made per ``--metrics``, fed the worker's state at each scrape."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol

from wsserver.engine.base import Engine
from wsserver.metrics import WorkerMetrics, worker_metrics
from wsserver.metrics.collectors import WorkerStateCollector
from wsserver.session.runtime import SessionRuntime
from wsserver.store.base import SessionStore
from wsserver.transport.websocket import Connection
from wsserver.worker.settings import Settings


class MeteredWorker(Protocol):
    """What the scrape reads of the worker."""

    settings: Settings
    engine: Engine
    store: SessionStore

    @property
    def connections(self) -> Collection[Connection]:
        """Open connections."""
        ...

    @property
    def sessions(self) -> Mapping[str, SessionRuntime]:
        """Live sessions on this worker, by id."""
        ...


def metrics_of(worker: MeteredWorker) -> WorkerMetrics:
    """The worker's metrics (the no-op twin with ``--metrics off``), its store timed."""
    metrics = worker_metrics(worker.settings.metrics == "on")
    if not metrics.enabled:
        return metrics
    metrics.time_store(worker.store)

    def sessions() -> dict[str, int]:
        attached = sum(1 for r in worker.sessions.values() if r.transport is not None)
        return {"attached": attached, "detached": len(worker.sessions) - attached}

    def connections() -> dict[str, int]:
        bound = sum(1 for c in worker.connections if c.runtime is not None)
        return {"session": bound, "handshake": len(worker.connections) - bound}

    metrics.collect(WorkerStateCollector(sessions, connections, worker.engine.stats))
    return metrics
