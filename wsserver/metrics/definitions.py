"""Every metric of the worker (``wsserver_*``) and the router (``wsserver_router_*``).

Each set is made in a registry of its own (one per server object), never in the
library's global registry. docs/METRICS.md lists them with their labels and meaning.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics

from wsserver.metrics.token_gaps import LoopHistogram

# No `_created` series beside each counter and histogram: they double the series a
# scrape stores and no panel reads them (the library's switch is process-wide).
disable_created_metrics()  # type: ignore[no-untyped-call]  # the library leaves it unannotated

LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
"""Seconds, 1 ms to 10 s: a token gap is milliseconds, a first token up to seconds."""

STORE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5)
"""Seconds: a Redis round trip is 0.1-1 ms on a LAN; its timeout is seconds."""

REPLAY_BUCKETS = (0, 1, 4, 16, 64, 256, 1024, 4096)
"""Events replayed by one resume (the replay buffer holds 4096 by default)."""


@dataclass(frozen=True, slots=True)
class WorkerMetricSet:
    """The worker's metrics that its code updates (the gauges read at scrape time are
    in :mod:`wsserver.metrics.collectors`)."""

    registry: CollectorRegistry
    ttft: Histogram
    inter_token: LoopHistogram
    stop_latency: Histogram
    barge_in: Histogram
    responses: Counter
    tokens_generated: Counter
    tokens_delivered: Counter
    tokens_wasted: Counter
    resumes: Counter
    events_replayed: Histogram
    closes: Counter
    store_latency: Histogram
    store_errors: Counter
    tool_calls: Counter
    auth_refusals: Counter


def worker_metric_set() -> WorkerMetricSet:
    """A fresh set of the worker's metrics in a registry of its own."""
    r = CollectorRegistry(auto_describe=True)
    return WorkerMetricSet(
        registry=r,
        ttft=Histogram(
            "wsserver_ttft_seconds",
            "engine request submitted to its first output chunk",
            buckets=LATENCY_BUCKETS,
            registry=r,
        ),
        inter_token=_registered(
            r,
            LoopHistogram(
                "wsserver_inter_token_seconds",
                "gap between consecutive output chunks of one engine request",
                LATENCY_BUCKETS,
            ),
        ),
        stop_latency=Histogram(
            "wsserver_stop_latency_seconds",
            "response.interrupt or response.cancel received to its response.done sent",
            ["kind"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        ),
        barge_in=Histogram(
            "wsserver_barge_in_seconds",
            "speech onset (server VAD) to the last output frame of the response sent",
            buckets=LATENCY_BUCKETS,
            registry=r,
        ),
        responses=Counter(
            "wsserver_responses",
            "responses ended, by status and reason (counted once, with their usage)",
            ["status", "reason"],
            registry=r,
        ),
        tokens_generated=Counter(
            "wsserver_tokens_generated", "output tokens the engine generated", registry=r
        ),
        tokens_delivered=Counter(
            "wsserver_tokens_delivered", "output tokens that left for the client", registry=r
        ),
        tokens_wasted=Counter(
            "wsserver_tokens_wasted",
            "output tokens generated but never delivered, by how the response ended",
            ["status", "reason"],
            registry=r,
        ),
        resumes=Counter(
            "wsserver_resumes",
            "session.resume answers: resumed, or the error code of the refusal",
            ["outcome"],
            registry=r,
        ),
        events_replayed=Histogram(
            "wsserver_resume_events_replayed",
            "events one successful resume replayed",
            buckets=REPLAY_BUCKETS,
            registry=r,
        ),
        closes=Counter(
            "wsserver_connection_closes",
            "connections the worker closed, by close code (unknown codes: other)",
            ["code"],
            registry=r,
        ),
        store_latency=Histogram(
            "wsserver_store_call_seconds",
            "session store calls, by operation",
            ["operation"],
            buckets=STORE_BUCKETS,
            registry=r,
        ),
        store_errors=Counter(
            "wsserver_store_errors",
            "session store calls that raised, by operation and kind",
            ["operation", "kind"],
            registry=r,
        ),
        tool_calls=Counter(
            "wsserver_tool_calls",
            "tool calls: emitted, answered (result / error_result), timed out",
            ["outcome"],
            registry=r,
        ),
        auth_refusals=Counter(
            "wsserver_auth_refusals",
            "HTTP requests and upgrades refused before a session, by reason",
            ["reason"],
            registry=r,
        ),
    )


def _registered(registry: CollectorRegistry, histogram: LoopHistogram) -> LoopHistogram:
    registry.register(histogram)
    return histogram


@dataclass(frozen=True, slots=True)
class RouterMetricSet:
    """The router's metrics that its code updates."""

    registry: CollectorRegistry
    placed: Counter
    relayed_bytes: Counter
    placement_failures: Counter
    auth_refusals: Counter


def router_metric_set() -> RouterMetricSet:
    """A fresh set of the router's metrics in a registry of its own."""
    r = CollectorRegistry(auto_describe=True)
    return RouterMetricSet(
        registry=r,
        placed=Counter(
            "wsserver_router_connections",
            "upgrades the router handled, by outcome (relayed, worker_answer, no_worker)",
            ["outcome"],
            registry=r,
        ),
        relayed_bytes=Counter(
            "wsserver_router_relayed_bytes",
            "bytes relayed, by direction (client_to_worker, worker_to_client)",
            ["direction"],
            registry=r,
        ),
        placement_failures=Counter(
            "wsserver_router_placement_failures",
            "a worker tried for a connection that did not take it (refused, unreachable)",
            ["kind"],
            registry=r,
        ),
        auth_refusals=Counter(
            "wsserver_router_auth_refusals",
            "requests the router refused before contacting a worker, by reason",
            ["reason"],
            registry=r,
        ),
    )
