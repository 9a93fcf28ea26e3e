"""Gauges read at scrape time: sessions and connections by state, and the engine.

Nothing is counted on the hot path for these: each scrape reads the worker's own
numbers (its session table, its connection set, ``Engine.stats()``), so an engine
needs no instrumentation of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

ENGINE_GAUGES = {
    "active": (("active", "running"), "engine requests generating now"),
    "queued": (("queued",), "engine requests waiting for a slot"),
    "slots": (("slots",), "engine requests that can generate at once"),
}
"""Gauge name -> the ``Engine.stats()`` keys that give it (engines name them differently)."""

ENGINE_UPSTREAM_ERRORS = ("failures", "pipeline_failures", "upstream_errors")
"""``Engine.stats()`` keys that count failed upstream requests."""

SESSION_STATES = ("attached", "detached")
CONNECTION_STATES = ("session", "handshake")


class WorkerStateCollector(Collector):
    """Sessions, connections and the engine's load, from the worker at each scrape."""

    def __init__(
        self,
        sessions: Callable[[], Mapping[str, int]],
        connections: Callable[[], Mapping[str, int]],
        engine_stats: Callable[[], Mapping[str, int]],
    ) -> None:
        self._sessions = sessions
        self._connections = connections
        self._engine_stats = engine_stats

    def collect(self) -> Iterable[Metric]:
        """One sample per state and engine figure (called by the registry per scrape)."""
        sessions = GaugeMetricFamily(
            "wsserver_sessions", "live sessions on this worker, by state", labels=["state"]
        )
        counts = self._sessions()
        for state in SESSION_STATES:
            sessions.add_metric([state], counts.get(state, 0))
        yield sessions
        connections = GaugeMetricFamily(
            "wsserver_connections",
            "open WebSocket connections: carrying a session, or before its handshake",
            labels=["state"],
        )
        counts = self._connections()
        for state in CONNECTION_STATES:
            connections.add_metric([state], counts.get(state, 0))
        yield connections
        stats = self._engine_stats()
        for name, (keys, documentation) in ENGINE_GAUGES.items():
            value = next((stats[key] for key in keys if key in stats), 0)
            yield GaugeMetricFamily(f"wsserver_engine_{name}", documentation, value)
        errors = sum(stats.get(key, 0) for key in ENGINE_UPSTREAM_ERRORS)
        yield CounterMetricFamily(
            "wsserver_engine_upstream_errors",
            "engine requests that failed upstream (model server errors, after retries)",
            errors,
        )
        if "tokens_generated" in stats:
            yield CounterMetricFamily(
                "wsserver_engine_tokens_generated",
                "tokens the engine decoded, for every request (aborted ones included)",
                stats["tokens_generated"],
            )

    def describe(self) -> Iterable[Metric]:
        """Nothing up front: the registry then never calls collect() at registration."""
        return ()
