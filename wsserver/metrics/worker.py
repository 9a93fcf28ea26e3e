"""What the worker's code calls: one method per thing that happened, with bounded labels.

:func:`worker_metrics` makes the live object for one worker; :data:`NO_METRICS` is its
twin for ``--metrics off``: the same methods, doing nothing, and no registry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.registry import Collector

from wsserver.metrics import labels
from wsserver.metrics.definitions import WorkerMetricSet, worker_metric_set
from wsserver.metrics.meter import NO_METER, NoMeter, SessionMeter
from wsserver.metrics.store_timing import time_store_calls


class UsageLike(Protocol):
    """What a response's usage says (``protocol.usage.Usage``)."""

    @property
    def output_tokens_generated(self) -> int:
        """Tokens the engine generated for the response."""
        ...

    @property
    def output_tokens_delivered(self) -> int:
        """Tokens that left for the client."""
        ...


class EndedResponse(Protocol):
    """A ledger entry of an ended response (``wsserver.store.base.ResponseUsage``)."""

    @property
    def status(self) -> str:
        """How it ended."""
        ...

    @property
    def reason(self) -> str | None:
        """Why."""
        ...

    @property
    def usage(self) -> UsageLike:
        """Its token counts."""
        ...


class WorkerMetrics:
    """The worker's metrics with ``--metrics off``: every call does nothing."""

    enabled = False
    registry: CollectorRegistry | None = None

    def session_meter(self) -> NoMeter:
        """The meter of a new session."""
        return NO_METER

    def responses_ended(self, entries: Sequence[EndedResponse], start: int) -> None:
        """``entries[start:]`` just ended (each is passed here once)."""

    def resumed(self, replayed: int) -> None:
        """A resume succeeded and replays ``replayed`` events."""

    def resume_refused(self, code: str) -> None:
        """A resume was refused with error ``code``."""

    def closed(self, code: int) -> None:
        """The worker closed a connection with ``code``."""

    def tool_calls(self, outcome: str, count: int = 1) -> None:
        """Tool calls emitted, answered or timed out."""

    def auth_refused(self, reason: str) -> None:
        """A request was refused before a session (credential, origin, rate)."""

    def time_store(self, store: Any) -> None:
        """Time ``store``'s calls from now on."""

    def collect(self, collector: Collector) -> None:
        """Read ``collector`` at every scrape."""


NO_METRICS = WorkerMetrics()
"""The worker's metrics with ``--metrics off``."""


class _LiveWorkerMetrics(WorkerMetrics):
    enabled = True

    def __init__(self, metric_set: WorkerMetricSet) -> None:
        self.set = metric_set
        self.registry = metric_set.registry
        self._ended: dict[tuple[str, str], tuple[Counter, Counter]] = {}
        self._resumed = metric_set.resumes.labels("resumed")
        self._generated = metric_set.tokens_generated
        self._delivered = metric_set.tokens_delivered

    def session_meter(self) -> NoMeter:
        s = self.set
        return SessionMeter(s.ttft, s.inter_token, s.stop_latency, s.barge_in)

    def responses_ended(self, entries: Sequence[EndedResponse], start: int) -> None:
        for entry in entries[start:]:
            key = (labels.status(entry.status), labels.reason(entry.reason))
            children = self._ended.get(key)
            if children is None:  # at most |statuses| x |reasons| pairs, bound once each
                children = (self.set.responses.labels(*key), self.set.tokens_wasted.labels(*key))
                self._ended[key] = children
            usage = entry.usage
            generated, delivered = usage.output_tokens_generated, usage.output_tokens_delivered
            children[0].inc()
            self._generated.inc(generated)
            self._delivered.inc(delivered)
            if generated > delivered:
                children[1].inc(generated - delivered)

    def resumed(self, replayed: int) -> None:
        self._resumed.inc()
        self.set.events_replayed.observe(replayed)

    def resume_refused(self, code: str) -> None:
        self.set.resumes.labels(labels.bounded(code, labels.RESUME_REFUSALS)).inc()

    def closed(self, code: int) -> None:
        self.set.closes.labels(labels.close_code(code)).inc()

    def tool_calls(self, outcome: str, count: int = 1) -> None:
        self.set.tool_calls.labels(labels.bounded(outcome, labels.TOOL_OUTCOMES)).inc(count)

    def auth_refused(self, reason: str) -> None:
        self.set.auth_refusals.labels(labels.bounded(reason, labels.AUTH_REASONS)).inc()

    def time_store(self, store: Any) -> None:
        time_store_calls(store, self.set.store_latency, self.set.store_errors)

    def collect(self, collector: Collector) -> None:
        self.set.registry.register(collector)


def worker_metrics(enabled: bool = True) -> WorkerMetrics:
    """The metrics of one worker: live ones in a registry of their own, or the no-op twin."""
    return _LiveWorkerMetrics(worker_metric_set()) if enabled else NO_METRICS
