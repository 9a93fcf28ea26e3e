"""The Kubernetes manifests under ``k8s/``: valid against the Kubernetes API schemas, and
consistent with each other, with the Dockerfile and with the ``wsserver`` command line.

Everything here is offline and static: schemas come from the ``kubernetes-validate``
package, the kustomizations are resolved by a small builder (``manifests.py``,
cross-checked against ``kubectl kustomize`` when kubectl is installed), and the
Dockerfile is only read. The credentials the manifests mount are checked in
``test_credentials.py``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import all_versions

from tests.k8s.manifests import (
    CUSTOM_KINDS,
    FIELD_REF_SAMPLES,
    HEADLESS,
    K8S,
    KUSTOMIZATION,
    OVERLAY,
    REDIS,
    ROOT,
    ROUTER,
    WORKER,
    Doc,
    build,
    container_port,
    copy_of_k8s,
    env_values,
    key,
    kustomization_files,
    load,
    manifest_files,
    one,
    only_container,
    parse,
    pre_stop_seconds,
    read_kustomization,
    resource_files,
    selected_names,
    worker_settings,
    workloads,
)
from wsserver.cli.main import build_parser
from wsserver.worker.settings import ENV_PREFIX, Settings

# --- schema validation -----------------------------------------------------------------


def _checked_versions() -> list[str]:
    """The oldest Kubernetes minor version the package ships from 1.25 on, and the newest."""
    minors = sorted(
        {tuple(int(part) for part in v.split(".")[:2]) for v in all_versions()}, key=tuple
    )
    supported = [m for m in minors if m >= (1, 25)]
    return sorted({f"{m[0]}.{m[1]}" for m in (supported[0], supported[-1])})


def _manifest_documents() -> list[Any]:
    return [
        pytest.param(doc, id=f"{path.relative_to(K8S)}:{doc['kind']}/{doc['metadata']['name']}")
        for path in manifest_files()
        for doc in load(path)
        if doc["kind"] not in CUSTOM_KINDS
    ]


def test_there_are_manifests() -> None:
    assert len(manifest_files()) >= 10
    assert all(doc["apiVersion"] and doc["kind"] for p in manifest_files() for doc in load(p))


@pytest.mark.parametrize("version", _checked_versions())
@pytest.mark.parametrize("doc", _manifest_documents())
def test_document_is_valid_kubernetes(doc: Doc, version: str) -> None:
    # strict: unknown fields (a misspelt key that kubectl would drop or reject) fail too.
    kubernetes_validate.validate(doc, version, strict=True)


def test_validation_is_strict() -> None:
    """The check above would catch a misspelt field."""
    [worker] = [d for d in load(K8S / "base" / "worker-deployment.yaml")]
    broken = json.loads(json.dumps(worker))
    broken["spec"]["template"]["spec"]["terminationGracePeriod"] = 40
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, _checked_versions()[-1], strict=True)


# --- kustomizations --------------------------------------------------------------------


@pytest.mark.parametrize("path", kustomization_files(), ids=lambda p: str(p.relative_to(K8S)))
def test_kustomization_lists_existing_resources(path: Path) -> None:
    kustomization = read_kustomization(path.parent)
    kinds = {
        "Kustomization": "kustomize.config.k8s.io/v1beta1",
        "Component": "kustomize.config.k8s.io/v1alpha1",  # monitoring/
    }
    assert kustomization["apiVersion"] == kinds[kustomization["kind"]]
    assert kustomization["resources"]
    for entry in kustomization["resources"]:
        target = path.parent / entry
        assert target.is_file() or (target / KUSTOMIZATION).is_file(), f"{path}: {entry}"


def test_every_manifest_is_listed_exactly_once() -> None:
    listed: list[Path] = []
    for path in kustomization_files():
        for entry in read_kustomization(path.parent)["resources"]:
            target = (path.parent / entry).resolve()
            if target.is_file():
                listed.append(target)
    assert sorted(listed) == sorted(p.resolve() for p in manifest_files())


def test_default_deployment_leaves_out_the_ingress_nginx_alternative(
    default: list[Doc], overlay: list[Doc]
) -> None:
    default_files = resource_files(K8S)
    assert not any(OVERLAY.resolve() in p.parents for p in default_files)
    assert (OVERLAY / "ingress.yaml").resolve() in resource_files(OVERLAY)
    assert not [d for d in default if d["kind"] == "Ingress"]
    assert [d["metadata"]["name"] for d in overlay if d["kind"] == "Ingress"] == ["wsserver"]
    # The alternative replaces the router; everything else is the same.
    router_parts = {
        ("Deployment", ROUTER),
        ("Service", "wsserver"),
        ("PodDisruptionBudget", ROUTER),
        ("NetworkPolicy", ROUTER),
    }
    assert router_parts <= set(map(key, default))
    assert set(map(key, overlay)) == (set(map(key, default)) - router_parts) | {
        ("Ingress", "wsserver")
    }


def test_images_are_set_by_the_kustomization(default: list[Doc]) -> None:
    images = {i["name"] for i in read_kustomization(K8S / "base").get("images", [])}
    for workload in workloads(default):
        image = only_container(workload)["image"]
        assert image in images or image.startswith("redis:"), image


def test_no_duplicate_resources(default: list[Doc], overlay: list[Doc]) -> None:
    for docs in (default, overlay):
        keys = [key(doc) for doc in docs]
        assert len(keys) == len(set(keys))


def _kubectl_kustomize(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _generator_name(doc: Doc, generators: set[str]) -> str:
    """A generated resource's name without kustomize's hash suffix."""
    name: str = doc["metadata"]["name"]
    base, _, suffix = name.rpartition("-")
    return base if base in generators and re.fullmatch(r"[a-z0-9]{10}", suffix) else name


needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl")


@needs_kubectl
@pytest.mark.parametrize("directory", [K8S, OVERLAY], ids=["default", "ingress-nginx"])
def test_kustomize_builds_what_the_checks_read(directory: Path, tmp_path: Path) -> None:
    """kubectl's kustomize agrees with this file's builder (and accepts the layout), given
    the operator's credential files (dummies here)."""
    copy = copy_of_k8s(tmp_path, credentials=True)
    result = _kubectl_kustomize(copy / directory.relative_to(K8S))
    assert result.returncode == 0, result.stderr
    built = [doc for doc in yaml.safe_load_all(result.stdout) if doc is not None]
    spec = read_kustomization(K8S / "base")
    generators = {
        g["name"] for field in ("secretGenerator", "configMapGenerator") for g in spec[field]
    }
    names = {(d["kind"], _generator_name(d, generators)): d["metadata"]["name"] for d in built}
    assert sorted(names) == sorted(map(key, build(directory)))
    namespaced = [d for d in built if d["kind"] != "Namespace"]
    assert {d["metadata"].get("namespace") for d in namespaced} == {"wsserver"}
    # Kustomize renamed the ConfigMap (hash suffix) and every reference to it with it.
    for workload in (d for d in built if d["kind"] == "Deployment"):
        pod = workload["spec"]["template"]["spec"]
        refs = [
            var["valueFrom"]["configMapKeyRef"]["name"]
            for var in only_container(workload).get("env", [])
            if "configMapKeyRef" in var.get("valueFrom", {})
        ]
        refs += [v["secret"]["secretName"] for v in pod.get("volumes", []) if "secret" in v]
        assert refs
        for ref in refs:
            assert ref in set(names.values()), f"{key(workload)} refers to a missing {ref}"


@needs_kubectl
def test_kustomize_refuses_to_build_without_the_credentials(tmp_path: Path) -> None:
    """No credential files, no deployment: nothing falls back to a shipped credential."""
    copy = copy_of_k8s(tmp_path, credentials=False)
    for directory in (copy, copy / OVERLAY.relative_to(K8S)):
        result = _kubectl_kustomize(directory)
        assert result.returncode != 0
        assert "credentials/api-keys" in result.stderr


# --- workers ---------------------------------------------------------------------------


def test_worker_command_line_is_valid(default: list[Doc]) -> None:
    container = only_container(one(default, "Deployment", WORKER))
    settings = worker_settings(container)
    assert settings.host == "0.0.0.0"
    assert settings.port == container_port(container, "ws") == 8765
    # Named after the pod, reachable at the pod's IP: what the router dials.
    assert settings.worker_id == FIELD_REF_SAMPLES["metadata.name"]
    assert settings.advertise_url == f"ws://{FIELD_REF_SAMPLES['status.podIP']}:{settings.port}"
    assert settings.max_sessions > 0
    env = {var["name"]: var for var in container["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"


def test_worker_grace_period_covers_pre_stop_and_drain(default: list[Doc]) -> None:
    pod = one(default, "Deployment", WORKER)["spec"]["template"]["spec"]
    container = pod["containers"][0]
    settings = worker_settings(container)
    pre_stop = pre_stop_seconds(container)
    assert pre_stop > 0
    assert settings.drain_timeout > 0
    # The grace period counts from the start of preStop; SIGKILL must not cut the drain
    # or the 1012 closing handshakes that follow it.
    assert pod["terminationGracePeriodSeconds"] > pre_stop + settings.drain_timeout
    assert pod["terminationGracePeriodSeconds"] >= (
        pre_stop + settings.drain_timeout + settings.close_timeout
    )


def test_worker_probes(default: list[Doc]) -> None:
    container = only_container(one(default, "Deployment", WORKER))
    port = worker_settings(container).port
    expected = {
        "startupProbe": "/healthz",
        "livenessProbe": "/healthz",
        "readinessProbe": "/readyz",
    }
    for probe, path in expected.items():
        http = container[probe]["httpGet"]
        assert http["path"] == path, probe
        assert container_port(container, http["port"]) == port, probe


def test_worker_rollout_keeps_capacity(default: list[Doc]) -> None:
    worker = one(default, "Deployment", WORKER)
    rolling = worker["spec"]["strategy"]["rollingUpdate"]
    assert (rolling["maxSurge"], rolling["maxUnavailable"]) == (1, 0)
    # The autoscaler owns the replica count; a count here would be re-applied on deploy.
    assert "replicas" not in worker["spec"]


def test_worker_resources(default: list[Doc]) -> None:
    resources = only_container(one(default, "Deployment", WORKER))["resources"]
    assert resources["requests"]["cpu"] == "500m"
    assert resources["limits"]["cpu"] == "1"
    assert resources["requests"]["memory"] == "512Mi"
    assert resources["limits"]["memory"] == "1Gi"


def test_worker_service_is_headless(default: list[Doc]) -> None:
    service = one(default, "Service", WORKER)
    assert service["spec"]["clusterIP"] == HEADLESS
    assert selected_names(default, service["spec"]["selector"]) == [WORKER]
    [port] = service["spec"]["ports"]
    container = only_container(one(default, "Deployment", WORKER))
    assert port["port"] == container_port(container, port["targetPort"]) == 8765


# --- autoscaling and disruption budgets ------------------------------------------------


def test_hpa_scales_the_workers_gently(default: list[Doc]) -> None:
    hpa = one(default, "HorizontalPodAutoscaler", WORKER)
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"], target["name"]) == (
        "apps/v1",
        "Deployment",
        WORKER,
    )
    one(default, "Deployment", WORKER)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 20)
    [metric] = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert metric["resource"]["target"] == {"type": "Utilization", "averageUtilization": 60}
    # Utilization is relative to the request: without one the HPA cannot compute it.
    assert only_container(one(default, "Deployment", WORKER))["resources"]["requests"]["cpu"]
    down = hpa["spec"]["behavior"]["scaleDown"]
    assert down["stabilizationWindowSeconds"] >= 300
    assert down["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 60}]


@pytest.mark.parametrize("name", [WORKER, ROUTER])
def test_pdb_selects_its_pods(default: list[Doc], name: str) -> None:
    pdb = one(default, "PodDisruptionBudget", name)
    assert selected_names(default, pdb["spec"]["selector"]) == [name]
    assert pdb["spec"]["maxUnavailable"] == 1


def test_router_pdb_keeps_one_router(default: list[Doc]) -> None:
    router = one(default, "Deployment", ROUTER)
    pdb = one(default, "PodDisruptionBudget", ROUTER)
    assert router["spec"]["replicas"] - pdb["spec"]["maxUnavailable"] >= 1


# --- router ----------------------------------------------------------------------------


def test_router_command_line(default: list[Doc]) -> None:
    router = one(default, "Deployment", ROUTER)
    assert router["spec"]["replicas"] == 2
    container = only_container(router)
    namespace = parse(container)
    assert namespace.command == "router"
    assert namespace.host == "0.0.0.0"
    assert int(namespace.port) == container_port(container, "http") == 8080


def test_router_probes(default: list[Doc]) -> None:
    container = only_container(one(default, "Deployment", ROUTER))
    port = int(parse(container).port)
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        http = container[probe]["httpGet"]
        assert http["path"] == "/healthz", probe
        assert container_port(container, http["port"]) == port, probe


def test_router_service(default: list[Doc]) -> None:
    service = one(default, "Service", "wsserver")
    assert service["spec"]["type"] == "ClusterIP"
    assert "sessionAffinity" not in service["spec"]
    assert selected_names(default, service["spec"]["selector"]) == [ROUTER]
    [port] = service["spec"]["ports"]
    container = only_container(one(default, "Deployment", ROUTER))
    assert port["port"] == 80
    assert container_port(container, port["targetPort"]) == 8080


# --- Redis and the store URLs ----------------------------------------------------------


def test_redis_is_a_persistent_statefulset(default: list[Doc]) -> None:
    statefulset = one(default, "StatefulSet", REDIS)
    service = one(default, "Service", REDIS)
    assert statefulset["spec"]["serviceName"] == REDIS
    assert service["spec"]["clusterIP"] == HEADLESS
    assert selected_names(default, service["spec"]["selector"]) == [REDIS]
    container = only_container(statefulset)
    assert container["image"].startswith("redis:7")
    args = [str(a) for a in container["args"]]
    assert args[args.index("--appendonly") + 1] == "yes"
    data_dir = args[args.index("--dir") + 1]
    [claim] = statefulset["spec"]["volumeClaimTemplates"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == data_dir


@pytest.mark.parametrize("name", [WORKER, ROUTER])
def test_store_url_points_at_the_redis_service(default: list[Doc], name: str) -> None:
    container = only_container(one(default, "Deployment", name))
    namespace = parse(container)
    store = namespace.store
    if store is None:  # the flag wins; else the variable
        store = env_values(container)[f"{ENV_PREFIX}STORE"]
    url = urlsplit(store)
    assert url.scheme == "redis"
    service = one(default, "Service", url.hostname or "")
    [port] = service["spec"]["ports"]
    assert url.port == port["port"] == 6379
    redis = only_container(one(default, "StatefulSet", REDIS))
    assert container_port(redis, port["targetPort"]) == 6379


# --- network policies ------------------------------------------------------------------


def _policy(docs: list[Doc], name: str) -> Doc:
    policy = one(docs, "NetworkPolicy", name)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    return policy


def _rule_ports(rule: Doc) -> list[int]:
    return [p["port"] for p in rule["ports"]]


def test_every_network_policy_selects_one_workload(default: list[Doc]) -> None:
    policies = [d for d in default if d["kind"] == "NetworkPolicy"]
    selected = sorted(
        n for p in policies for n in selected_names(default, p["spec"]["podSelector"])
    )
    assert selected == sorted([WORKER, ROUTER, REDIS])


def test_workers_accept_only_the_router_and_ingress_nginx(default: list[Doc]) -> None:
    policy = _policy(default, WORKER)
    assert selected_names(default, policy["spec"]["podSelector"]) == [WORKER]
    [rule] = policy["spec"]["ingress"]
    port = worker_settings(only_container(one(default, "Deployment", WORKER))).port
    assert _rule_ports(rule) == [port]
    peers = rule["from"]
    pod_peers = [p for p in peers if "namespaceSelector" not in p]
    namespace_peers = [p for p in peers if "namespaceSelector" in p]
    assert [selected_names(default, p["podSelector"]) for p in pod_peers] == [[ROUTER]]
    [ingress_nginx] = namespace_peers
    assert ingress_nginx["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "ingress-nginx"
    }


def test_redis_accepts_only_workers_and_routers(default: list[Doc]) -> None:
    policy = _policy(default, "wsserver-redis")
    assert selected_names(default, policy["spec"]["podSelector"]) == [REDIS]
    [rule] = policy["spec"]["ingress"]
    assert _rule_ports(rule) == [6379]
    assert all("namespaceSelector" not in peer for peer in rule["from"])
    reached = sorted(
        n for peer in rule["from"] for n in selected_names(default, peer["podSelector"])
    )
    assert reached == sorted([WORKER, ROUTER])


def test_router_accepts_anyone_on_its_port(default: list[Doc]) -> None:
    policy = _policy(default, ROUTER)
    assert selected_names(default, policy["spec"]["podSelector"]) == [ROUTER]
    [rule] = policy["spec"]["ingress"]
    assert "from" not in rule
    container = only_container(one(default, "Deployment", ROUTER))
    # Policies see pod ports, not the Service's port 80.
    assert _rule_ports(rule) == [container_port(container, "http")]


# --- pod hardening ---------------------------------------------------------------------


@pytest.mark.parametrize("name", [WORKER, ROUTER, REDIS])
def test_pods_are_hardened(default: list[Doc], name: str) -> None:
    [workload] = [w for w in workloads(default) if w["metadata"]["name"] == name]
    pod = workload["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    # Service links would inject WSSERVER_PORT=tcp://... from the `wsserver` Service, which
    # the worker would read as its --port.
    assert pod["enableServiceLinks"] is False
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"]["drop"] == ["ALL"]
        for kind in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(container["resources"][kind]), kind


def test_namespace_enforces_restricted_pods(default: list[Doc]) -> None:
    namespace = one(default, "Namespace", "wsserver")
    labels = namespace["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert read_kustomization(K8S / "base")["namespace"] == "wsserver"
    assert all("namespace" not in d["metadata"] for p in manifest_files() for d in load(p))


# --- the ingress-nginx alternative -----------------------------------------------------


def test_ingress_hashes_on_the_session_id(overlay: list[Doc]) -> None:
    ingress = one(overlay, "Ingress", "wsserver")
    annotations = ingress["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    assert "$arg_session_id" in annotations[prefix + "upstream-hash-by"]
    defaults = Settings()
    for timeout in ("proxy-read-timeout", "proxy-send-timeout"):
        seconds = int(annotations[prefix + timeout])
        assert seconds >= 3600
        assert seconds > max(defaults.heartbeat_interval, defaults.ping_interval)
    assert annotations[prefix + "proxy-buffering"] == "off"
    assert annotations[prefix + "proxy-request-buffering"] == "off"
    assert ingress["spec"]["ingressClassName"] == "nginx"


def test_ingress_routes_to_the_worker_service(overlay: list[Doc]) -> None:
    ingress = one(overlay, "Ingress", "wsserver")
    backends = [
        path["backend"]["service"]
        for rule in ingress["spec"]["rules"]
        for path in rule["http"]["paths"]
    ]
    service = one(overlay, "Service", WORKER)
    ports = {p["port"] for p in service["spec"]["ports"]}
    assert backends
    for backend in backends:
        assert backend["name"] == WORKER
        assert backend["port"]["number"] in ports
    assert not [w for w in workloads(overlay) if w["metadata"]["name"] == ROUTER]


# --- Dockerfile ------------------------------------------------------------------------


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = (K8S / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    instructions = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            instructions.append((word.upper(), rest.strip()))
    return instructions


def _final_stage() -> list[tuple[str, str]]:
    instructions = _dockerfile()
    last_from = max(i for i, (word, _) in enumerate(instructions) if word == "FROM")
    return instructions[last_from:]


def _extras() -> set[str]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return set(tomllib.load(file)["project"]["optional-dependencies"])


def test_dockerfile_installs_the_package_from_the_repository() -> None:
    instructions = _dockerfile()
    bases = [args.split()[0] for word, args in instructions if word == "FROM"]
    assert bases and all(base == "python:3.11-slim" for base in bases)
    sources = {
        source.rstrip("/")
        for word, args in instructions
        if word == "COPY" and not args.startswith("--from")
        for source in args.split()[:-1]
    }
    assert sources == {"pyproject.toml", "README.md", "protocol", "wsserver"}
    for source in sources:
        assert (ROOT / source).exists(), source
    runs = " ".join(args for word, args in instructions if word == "RUN")
    assert re.search(r"pip install '\.\[otel\]'(\s|$)", runs), "the image can export spans"
    assert "otel" in _extras(), "the extra the image installs exists"

    ignore_file = (K8S / "Dockerfile.dockerignore").read_text().splitlines()
    ignored = {line.strip().rstrip("/") for line in ignore_file if not line.startswith("#")}
    assert not sources & ignored


def test_dockerfile_runs_wsserver_as_non_root(default: list[Doc]) -> None:
    stage = _final_stage()
    users = [args for word, args in stage if word == "USER"]
    assert users, "the final stage sets no USER: it would run as root"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) > 0, "a numeric uid lets Kubernetes check runAsNonRoot"
    for name in (WORKER, ROUTER):
        pod = one(default, "Deployment", name)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsUser"] == int(uid)
    exposed = {int(p) for word, args in stage if word == "EXPOSE" for p in args.split()}
    assert exposed == {8765, 8080}
    [entrypoint] = [json.loads(args) for word, args in stage if word == "ENTRYPOINT"]
    [cmd] = [json.loads(args) for word, args in stage if word == "CMD"]
    assert entrypoint == ["wsserver"]
    assert cmd == ["serve", "--host", "0.0.0.0"]
    assert build_parser().parse_args(cmd).command == "serve"
