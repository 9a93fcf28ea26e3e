"""The monitoring component (k8s/monitoring/): ServiceMonitors, metrics Services,
NetworkPolicies, the admin listener's patches and the plain prometheus.yml job agree with
the base manifests and with the ``wsserver`` command line. The ServiceMonitor is a CRD's
kind, which the Kubernetes schemas do not know: its fields are checked here by hand."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.k8s.manifests import (
    K8S,
    MONITORING,
    OVERLAY,
    ROUTER,
    SCRAPE_CONFIG,
    WORKER,
    Doc,
    build,
    cli_settings,
    copy_of_k8s,
    load,
    one,
    only_container,
    pod_labels,
    read_kustomization,
    selects,
)

WITH_MONITORING = K8S / "with-monitoring"
METRICS_PORT = "metrics"
SERVICE_MONITOR_API = "monitoring.coreos.com/v1"
SERVICE_MONITOR_SPEC = {"selector", "endpoints", "namespaceSelector", "jobLabel"}
ENDPOINT_FIELDS = {"port", "path", "scheme", "interval", "scrapeTimeout"}
PROMETHEUS_NAMESPACE = "monitoring"


def service_monitors() -> list[Doc]:
    return load(MONITORING / "servicemonitor.yaml")


def patched(docs: list[Doc]) -> list[Doc]:
    """``docs`` with the component's JSON patches applied (the ``add`` ops it uses)."""
    docs = copy.deepcopy(docs)
    for patch in read_kustomization(MONITORING)["patches"]:
        target = patch["target"]
        matches = [d for d in docs if (d["kind"], d["metadata"]["name"]) == (
            target["kind"], target["name"])]  # fmt: skip
        for doc in matches:
            for op in yaml.safe_load(patch["patch"]):
                assert op["op"] == "add" and op["path"].endswith("/-"), op
                node: Any = doc
                for part in op["path"].strip("/").split("/")[:-1]:
                    node = node[int(part)] if isinstance(node, list) else node[part]
                node.append(op["value"])
    return docs


@pytest.fixture(scope="module")
def monitored() -> list[Doc]:
    """The default deployment with the component, as its patches and resources make it."""
    extra = [doc for entry in read_kustomization(MONITORING)["resources"]
             for doc in load(MONITORING / entry)]  # fmt: skip
    return patched(build(K8S)) + extra


def test_component_is_optional(default: list[Doc], overlay: list[Doc]) -> None:
    """The base and the ingress-nginx deployment build without the Operator's CRDs."""
    for docs in (default, overlay):
        assert not [d for d in docs if d["kind"] == "ServiceMonitor"]
    assert read_kustomization(MONITORING)["kind"] == "Component"
    assert read_kustomization(WITH_MONITORING)["components"] == ["../monitoring"]


@pytest.mark.parametrize("name", [WORKER, ROUTER])
def test_admin_listener_is_the_metrics_port(monitored: list[Doc], name: str) -> None:
    container = only_container(one(monitored, "Deployment", name))
    settings = cli_settings(container)
    assert settings.admin_host == "0.0.0.0" and settings.metrics == "on"
    [port] = [p for p in container["ports"] if p["name"] == METRICS_PORT]
    assert port["containerPort"] == settings.admin_port


def test_without_the_component_the_admin_listener_stays_on_loopback(default: list[Doc]) -> None:
    for name in (WORKER, ROUTER):
        container = only_container(one(default, "Deployment", name))
        assert cli_settings(container).admin_host == "127.0.0.1"
        assert METRICS_PORT not in {p["name"] for p in container["ports"]}


@pytest.mark.parametrize("monitor", service_monitors(), ids=lambda d: d["metadata"]["name"])
def test_service_monitor_selects_a_metrics_service(monitored: list[Doc], monitor: Doc) -> None:
    assert monitor["apiVersion"] == SERVICE_MONITOR_API
    assert set(monitor) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(monitor["spec"]) <= SERVICE_MONITOR_SPEC
    selector = monitor["spec"]["selector"]
    assert set(selector) == {"matchLabels"}
    services = [d for d in monitored if d["kind"] == "Service"
                and selects(selector, d["metadata"].get("labels", {}))]  # fmt: skip
    [service] = services
    # A draining pod is not ready, and is still scraped until it exits.
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"]
    workload = one(monitored, "Deployment", monitor["metadata"]["name"])
    assert selects(service["spec"]["selector"], pod_labels(workload))
    container = only_container(workload)
    for endpoint in monitor["spec"]["endpoints"]:
        assert set(endpoint) <= ENDPOINT_FIELDS
        assert endpoint["path"] == "/metrics" and endpoint["scheme"] == "http"
        [port] = [p for p in service["spec"]["ports"] if p["name"] == endpoint["port"]]
        target = [p for p in container["ports"] if p["name"] == port["targetPort"]]
        assert target and target[0]["containerPort"] == cli_settings(container).admin_port


@pytest.mark.parametrize("name", [WORKER, ROUTER])
def test_only_prometheus_reaches_the_admin_port(monitored: list[Doc], name: str) -> None:
    workload = one(monitored, "Deployment", name)
    admin_port = cli_settings(only_container(workload)).admin_port
    admitting = [
        rule
        for policy in monitored
        if policy["kind"] == "NetworkPolicy"
        and selects(policy["spec"]["podSelector"], pod_labels(workload))
        for rule in policy["spec"]["ingress"]
        if admin_port in {p["port"] for p in rule.get("ports", [])}
    ]
    [rule] = admitting
    [source] = rule["from"]
    assert source == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": PROMETHEUS_NAMESPACE}}
    }


def test_plain_scrape_config_targets_the_metrics_port(monitored: list[Doc]) -> None:
    [job] = yaml.safe_load(SCRAPE_CONFIG.read_text())["scrape_configs"]
    assert job["metrics_path"] == "/metrics" and job["scheme"] == "http"
    [sd] = job["kubernetes_sd_configs"]
    assert sd["role"] == "pod"
    assert sd["namespaces"]["names"] == [read_kustomization(K8S / "base")["namespace"]]
    keeps = {
        rule["source_labels"][0]: rule["regex"]
        for rule in job["relabel_configs"]
        if rule.get("action") == "keep"
    }
    assert keeps["__meta_kubernetes_pod_container_port_name"] == METRICS_PORT
    kept = [
        w["metadata"]["name"]
        for w in monitored
        if w["kind"] in ("Deployment", "StatefulSet")
        and all(
            _matches(regex, pod_labels(w).get(_pod_label(source), ""))
            for source, regex in keeps.items()
            if source.startswith("__meta_kubernetes_pod_label_")
        )
    ]
    assert sorted(kept) == sorted([WORKER, ROUTER])
    for name in kept:
        ports = only_container(one(monitored, "Deployment", name))["ports"]
        assert METRICS_PORT in {p["name"] for p in ports}
    targets = {r["target_label"] for r in job["relabel_configs"] if "target_label" in r}
    assert {"namespace", "pod"} <= targets


def _pod_label(meta: str) -> str:
    """The pod label a ``__meta_kubernetes_pod_label_*`` name stands for (the ones here)."""
    suffix = meta.removeprefix("__meta_kubernetes_pod_label_")
    return suffix.replace("app_kubernetes_io_", "app.kubernetes.io/")


def _matches(regex: str, value: str) -> bool:
    """Whether a relabelling regex keeps ``value`` (Prometheus anchors it)."""
    return re.fullmatch(regex, value) is not None


needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl")


@needs_kubectl
@pytest.mark.parametrize("base", [K8S, OVERLAY], ids=["default", "ingress-nginx"])
def test_kustomize_builds_the_component(base: Path, tmp_path: Path) -> None:
    """kubectl's kustomize applies the component as the checks above read it, onto either
    deployment (the router's patch is a no-op without the router)."""
    root = copy_of_k8s(tmp_path, credentials=True)
    directory = root / WITH_MONITORING.relative_to(K8S)
    if base == OVERLAY:
        directory = root / "ingress-nginx-monitored"
        directory.mkdir()
        (directory / "kustomization.yaml").write_text(yaml.safe_dump({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": ["../ingress-nginx"], "components": ["../monitoring"],
        }))  # fmt: skip
    result = subprocess.run(
        ["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    built = [doc for doc in yaml.safe_load_all(result.stdout) if doc is not None]
    dashboard = one(built, "ConfigMap", "wsserver-grafana-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = (MONITORING / "grafana" / "wsserver-dashboard.json").read_text()
    assert dashboard["data"]["wsserver.json"] == shipped
    assert len(service_monitors()) == len([d for d in built if d["kind"] == "ServiceMonitor"])
    for workload in (d for d in built if d["kind"] == "Deployment"):
        # (kustomize renamed the ConfigMap the args refer to: read them as they are)
        args = only_container(workload)["args"]
        assert args[args.index("--admin-host") + 1] == "0.0.0.0", workload["metadata"]["name"]
