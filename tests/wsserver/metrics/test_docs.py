"""docs/METRICS.md names every metric the worker and the router expose (the dashboards
are built from it), and nothing that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from wsserver.metrics import render, router_metrics, worker_metrics
from wsserver.metrics.collectors import WorkerStateCollector

DOC = Path(__file__).parents[3] / "docs" / "METRICS.md"


def exposed() -> set[str]:
    """Every family name (with its ``_total`` for counters) of a worker and a router."""
    worker = worker_metrics()
    worker.collect(WorkerStateCollector(dict, dict, lambda: {"tokens_generated": 0}))
    names = set()
    for registry in (worker.registry, router_metrics().registry):
        assert registry is not None
        for family in text_string_to_metric_families(render(registry).decode()):
            names.add(family.name + ("_total" if family.type == "counter" else ""))
    return names


def test_every_metric_is_documented_and_every_documented_one_exists() -> None:
    documented = set(re.findall(r"^\| `(wsserver_[a-z_]+)` \|", DOC.read_text(), re.MULTILINE))
    names = exposed()
    assert len(names) >= 25
    assert names - documented == set(), "exposed but not in docs/METRICS.md"
    assert documented - names == set(), "in docs/METRICS.md but not exposed"
