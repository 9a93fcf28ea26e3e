"""The Grafana dashboard (k8s/monitoring/grafana/wsserver-dashboard.json): a valid
dashboard whose every query selects metrics and labels that a real worker and a real
router expose on /metrics (subprocesses on a real Redis, scraped once per module after
a little traffic), plus the labels the scrape configs attach."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.k8s.manifests import MONITORING, SCRAPE_CONFIG
from tests.k8s.promql import METRIC_PREFIX, read
from tests.processes import WorkerProcess, eventually
from tests.redis_server import RedisServer, free_port
from tests.wsserver.frontdoor.http import connect_as
from tests.wsserver.metrics.conftest import keys_file
from tests.wsserver.metrics.scrape import get
from tests.wsserver.router.test_router import FAST, RouterProcess
from wsserver.metrics.definitions import router_metric_set, worker_metric_set
from wsserver.metrics.labels import CLOSE_CODE_VALUES, STATUSES

DASHBOARD = MONITORING / "grafana" / "wsserver-dashboard.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
PANEL_TYPES = {"row", "timeseries", "stat"}
OPERATOR_TARGET_LABELS = {"namespace", "pod", "service", "container", "endpoint", "job", "instance"}
"""Labels the Prometheus Operator gives every target of a ServiceMonitor."""
SLOW_CONSUMER = "4000"
ROUTER_PREFIX = "wsserver_router_"
LITERAL_VALUES = {
    "state": {"attached", "detached", "session", "handshake"},
    "status": set(STATUSES),
    "code": set(CLOSE_CODE_VALUES),
}
"""The values a label can take, for the matchers that name one (docs/METRICS.md)."""

Doc = dict[str, Any]


@dataclass
class Exposed:
    """What the scrapes showed: sample name → its family, family → labels and type."""

    family_of: dict[str, str] = field(default_factory=dict)
    labels: dict[str, set[str]] = field(default_factory=dict)
    kind: dict[str, str] = field(default_factory=dict)

    def add(self, text: str) -> None:
        for family in text_string_to_metric_families(text):
            self.kind[family.name] = family.type
            self.labels.setdefault(family.name, set())
            for sample in family.samples:
                self.labels[family.name] |= set(sample.labels)
            suffixes = {
                "counter": ["_total"],
                "histogram": ["_bucket", "_sum", "_count"],
                "gauge": [""],
            }[family.type]
            for suffix in suffixes:
                self.family_of[family.name + suffix] = family.name


def _declared_labels() -> dict[str, set[str]]:
    """Label names as the servers' own metric definitions declare them: for families the
    scrape showed without a sample (nothing counted yet, such as a tool call timed out)."""
    declared: dict[str, set[str]] = {}
    for metric_set in (worker_metric_set(), router_metric_set()):
        for metric in (getattr(metric_set, f.name) for f in dataclasses.fields(metric_set)):
            name, labelnames = getattr(metric, "_name", None), getattr(metric, "_labelnames", None)
            if isinstance(name, str) and labelnames is not None:
                declared[name.removesuffix("_total")] = set(labelnames)
    return declared


async def _traffic(worker: WorkerProcess, router: RouterProcess, user: str, admin: str) -> None:
    """A refused request to each, and a response cancelled through the router: labelled
    series (refusal reasons, statuses, stop kinds, placements, relayed bytes) get samples."""
    for base in (worker.http, router.url.replace("ws://", "http://")):
        status, _, _ = await asyncio.to_thread(get, base + "/stats")
        assert status == 401, (base, status)
    await eventually(lambda: router.stats_as(admin)["live_workers"] == 1)
    client = await connect_as(router.url, key=user)
    await client.start()
    await client.send({"type": "response.create", "input": "cancel me"})
    await client.until("response.created")
    await client.send({"type": "response.cancel"})
    await client.until("response.done")
    await client.close()


@pytest.fixture(scope="module")
def exposed(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Exposed]:
    """The families of one real worker's and one real router's /metrics (admin listeners)."""
    redis_server.flush()
    keys, user, admin = keys_file(tmp_path_factory.mktemp("dashboard"))
    worker_admin, router_admin = free_port(), free_port()
    worker = WorkerProcess(
        "--store", redis_server.url, *FAST, "--api-keys-file", keys,
        "--admin-port", str(worker_admin), name="dashboard",
    ).start()  # fmt: skip
    router = None
    try:
        router = RouterProcess(
            redis_server.url, "--api-keys-file", keys, "--admin-port", str(router_admin)
        )
        asyncio.run(_traffic(worker, router, user, admin))
        found = Exposed()
        for port in (worker_admin, router_admin):
            status, _, text = get(f"http://127.0.0.1:{port}/metrics")
            assert status == 200, (port, status, text)
            found.add(text)
        yield found
    finally:
        if router is not None:
            router.stop()
        worker.stop()


def dashboard() -> Doc:
    doc: Doc = json.loads(DASHBOARD.read_text())
    return doc


def panels(doc: Doc) -> list[Doc]:
    """Every panel, those inside collapsed rows included."""
    found: list[Doc] = []
    for panel in doc["panels"]:
        found.append(panel)
        found.extend(panel.get("panels", []))
    return found


def queries(doc: Doc) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and every query variable."""
    found = [
        (f"panel {p['id']} {p['title']!r}", target["expr"])
        for p in panels(doc)
        for target in p.get("targets", [])
    ]
    for variable in doc["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            found.append((f"variable {variable['name']}", query.get("query", query)))
    return found


def target_labels() -> set[str]:
    """The labels both scrape routes attach: the plain config's relabelling targets (and
    job, instance), where the operator gives the same."""
    [job] = yaml.safe_load(SCRAPE_CONFIG.read_text())["scrape_configs"]
    relabelled = {rule["target_label"] for rule in job["relabel_configs"] if "target_label" in rule}
    return (relabelled | {"job", "instance"}) & OPERATOR_TARGET_LABELS


# --- the dashboard as Grafana reads it ------------------------------------------------


def test_dashboard_is_a_grafana_dashboard() -> None:
    doc = dashboard()
    assert doc["uid"] and doc["title"]
    assert 36 <= doc["schemaVersion"] <= 41
    ids = [p["id"] for p in panels(doc)]
    assert all(isinstance(i, int) for i in ids)
    assert len(ids) == len(set(ids)), "panel ids repeat"
    cells: set[tuple[int, int]] = set()
    for panel in panels(doc):
        assert panel["type"] in PANEL_TYPES, panel["type"]
        pos = panel["gridPos"]
        assert {"h", "w", "x", "y"} <= set(pos), panel["id"]
        assert pos["w"] > 0 and pos["h"] > 0 and pos["x"] >= 0 and pos["x"] + pos["w"] <= 24
        taken = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"])
                 for y in range(pos["y"], pos["y"] + pos["h"])}  # fmt: skip
        assert not taken & cells, f"panel {panel['id']} overlaps another"
        cells |= taken


def test_datasource_is_a_template_variable() -> None:
    doc = dashboard()
    variables = {v["name"]: v for v in doc["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for name in ("namespace", "pod"):
        assert variables[name]["type"] == "query" and variables[name]["datasource"] == DATASOURCE
    assert variables["pod"]["multi"] and variables["pod"]["includeAll"]
    for panel in panels(doc):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == DATASOURCE, panel["id"]
        refs = [t["refId"] for t in panel["targets"]]
        assert panel["targets"] and len(refs) == len(set(refs)), panel["id"]
        assert all(t["datasource"] == DATASOURCE for t in panel["targets"]), panel["id"]
    assert "DS_PROMETHEUS" not in DASHBOARD.read_text() or "__inputs" in doc


def test_every_query_filters_by_namespace_and_worker_pod() -> None:
    for where, expr in queries(dashboard()):
        if where == "variable namespace":
            continue
        reading = read(expr)
        matchers = set(reading.matchers)
        assert ("namespace", "=", "$namespace") in matchers, where
        workers = {m for m in reading.metrics if not m.startswith(ROUTER_PREFIX)}
        if workers and not where.startswith("variable"):
            # $pod lists worker pods: router panels must not filter on it.
            assert ("pod", "=~", "$pod") in matchers, where
        elif not where.startswith("variable"):
            assert "pod" not in {m[0] for m in reading.matchers}, where


def test_slow_consumer_closes_are_highlighted() -> None:
    closes = [
        p
        for p in panels(dashboard())
        if any("wsserver_connection_closes_total" in t["expr"] for t in p.get("targets", []))
    ]
    by_code = [p for p in closes if p["type"] == "timeseries"]
    assert by_code, "no closes-by-code panel"
    for panel in by_code:
        [override] = [
            o for o in panel["fieldConfig"]["overrides"]
            if o["matcher"] == {"id": "byName", "options": SLOW_CONSUMER}
        ]  # fmt: skip
        colours = [p["value"] for p in override["properties"] if p["id"] == "color"]
        assert colours == [{"mode": "fixed", "fixedColor": "red"}]
        assert panel["targets"][0]["legendFormat"] == "{{code}}"
    stats = [p for p in closes if p["type"] == "stat"]
    assert any(f'code="{SLOW_CONSUMER}"' in t["expr"] for p in stats for t in p["targets"])


def test_every_query_parses_as_promql() -> None:
    failures = []
    for where, expr in queries(dashboard()):
        try:
            read(expr)
        except ValueError as exc:
            failures.append(f"{where}: {exc}: {expr}")
    assert not failures, "\n".join(failures)


# --- what the queries select exists ---------------------------------------------------


def test_every_queried_metric_is_exposed(exposed: Exposed) -> None:
    checked = 0
    for where, expr in queries(dashboard()):
        reading = read(expr)
        assert not reading.unknown, f"{where}: unknown names {reading.unknown} in {expr}"
        assert reading.metrics, f"{where}: selects no wsserver metric: {expr}"
        missing = reading.metrics - set(exposed.family_of)
        assert not missing, f"{where}: {missing} not exposed by a worker or a router"
        checked += len(reading.metrics)
    assert checked >= 40


def test_every_label_a_query_uses_exists_on_its_metric(exposed: Exposed) -> None:
    declared = _declared_labels()
    attached = target_labels()
    assert {"namespace", "pod"} <= attached
    for where, expr in queries(dashboard()):
        reading = read(expr)
        assert len(reading.metrics) == 1, f"{where}: one metric per query keeps this check exact"
        [metric] = reading.metrics
        family = exposed.family_of[metric]
        labels = exposed.labels[family] or declared.get(family, set())
        # `le` only on a histogram's buckets.
        labels = labels | {"le"} if metric.endswith("_bucket") else labels - {"le"}
        missing = reading.labels - labels - attached
        assert not missing, f"{where}: {metric} has no label {missing}"
        for label, operator, value in reading.matchers:
            if label in LITERAL_VALUES and "$" not in value:
                values = set(value.split("|")) if operator == "=~" else {value}
                assert values <= LITERAL_VALUES[label], f"{where}: {label}={value}"


def test_every_exposed_metric_has_a_panel(exposed: Exposed) -> None:
    """Nothing a worker or a router exposes is left off the dashboard."""
    queried = {exposed.family_of[m] for _, e in queries(dashboard()) for m in read(e).metrics}
    ours = {name for name in exposed.kind if name.startswith(METRIC_PREFIX)}
    assert len(ours) >= 25
    assert ours - queried == set()


def test_labels_come_from_real_samples(exposed: Exposed) -> None:
    """The fallback to declared labels covers only families nothing counted yet."""
    with_samples = {name for name, labels in exposed.labels.items() if labels}
    for family in ("wsserver_sessions", "wsserver_responses", "wsserver_stop_latency_seconds",
                   "wsserver_router_connections", "wsserver_router_relayed_bytes",
                   "wsserver_auth_refusals", "wsserver_router_auth_refusals"):  # fmt: skip
        assert family in with_samples, family


def test_the_dashboard_is_what_the_configmap_ships() -> None:
    spec = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    [generator] = spec["configMapGenerator"]
    [entry] = generator["files"]
    key, _, path = entry.partition("=")
    assert key.endswith(".json") and (MONITORING / path).resolve() == DASHBOARD.resolve()
    assert generator["options"]["labels"] == {"grafana_dashboard": "1"}
    assert Path(DASHBOARD).stat().st_size < 256 * 1024  # kubectl apply's annotation limit
