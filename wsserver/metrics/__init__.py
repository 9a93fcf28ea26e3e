"""Prometheus metrics of the worker and the router (docs/METRICS.md lists every one).

:mod:`.definitions` defines every metric, each in a registry of its own server (never
the library's global one, so tests and several servers in one process never share a
count); :mod:`.labels` bounds every label value; :mod:`.worker` is what the worker's
code calls (a no-op twin when ``--metrics off``); :mod:`.meter` times one session's
responses; :mod:`.collectors` reads the engine and session counts at scrape time;
:mod:`.store_timing` times the session store's calls; :mod:`.router` is the router's;
:mod:`.exposition` renders the text format. Nothing here imports the rest of wsserver.
"""

from __future__ import annotations

from wsserver.metrics.exposition import CONTENT_TYPE, render
from wsserver.metrics.meter import NO_METER, SessionMeter
from wsserver.metrics.router import NO_ROUTER_METRICS, RouterMetrics, router_metrics
from wsserver.metrics.worker import NO_METRICS, WorkerMetrics, worker_metrics

__all__ = [
    "CONTENT_TYPE",
    "NO_METER",
    "NO_METRICS",
    "NO_ROUTER_METRICS",
    "RouterMetrics",
    "SessionMeter",
    "WorkerMetrics",
    "render",
    "router_metrics",
    "worker_metrics",
]
