"""The Kubernetes manifests under ``k8s/``: valid against the Kubernetes API schemas, and
consistent with each other, with the Dockerfile and with the ``wsserver`` command line.

Everything here is offline and static: schemas come from the ``kubernetes-validate``
package, the kustomizations are resolved by a small builder below (cross-checked against
``kubectl kustomize`` when kubectl is installed), and the Dockerfile is only read.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import all_versions

from wsserver.cli import build_parser
from wsserver.settings import ENV_PREFIX, Settings

Doc = dict[str, Any]

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
OVERLAY = K8S / "ingress-nginx"
KUSTOMIZATION = "kustomization.yaml"

WORKER = "wsserver-worker"
ROUTER = "wsserver-router"
REDIS = "redis"
HEADLESS = "None"

# What a pod's downward-API variables resolve to, for reading the args as a pod would.
FIELD_REF_SAMPLES = {"metadata.name": "wsserver-worker-5d8c9-x7k2q", "status.podIP": "10.1.2.3"}
VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


# --- loading ---------------------------------------------------------------------------


def _load(path: Path) -> list[Doc]:
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    for doc in docs:
        assert isinstance(doc, dict), f"{path}: a document is not a mapping"
    return docs


def _yaml_files() -> list[Path]:
    return sorted(p for p in K8S.rglob("*") if p.suffix in (".yaml", ".yml"))


def _kustomization_files() -> list[Path]:
    return [p for p in _yaml_files() if p.name == KUSTOMIZATION]


def _manifest_files() -> list[Path]:
    return [p for p in _yaml_files() if p.name != KUSTOMIZATION]


def _kustomization(directory: Path) -> Doc:
    [doc] = _load(directory / KUSTOMIZATION)
    return doc


def _key(doc: Doc) -> tuple[str, str]:
    return doc["kind"], doc["metadata"]["name"]


def _files(directory: Path) -> set[Path]:
    """Every manifest file a kustomization directory pulls in, through its bases."""
    found: set[Path] = set()
    for entry in _kustomization(directory).get("resources", []):
        path = (directory / entry).resolve()
        found |= _files(path) if path.is_dir() else {path}
    return found


def _build(directory: Path) -> list[Doc]:
    """The documents a kustomization directory yields: a minimal stand-in for kustomize.

    It follows ``resources`` (files and base directories) and applies ``$patch: delete``
    patches, the only kind these manifests use; ``namespace`` and ``images`` do not change
    what the checks below look at.
    """
    kustomization = _kustomization(directory)
    docs: list[Doc] = []
    for entry in kustomization.get("resources", []):
        path = (directory / entry).resolve()
        docs.extend(_build(path) if path.is_dir() else _load(path))
    for patch in kustomization.get("patches", []):
        body = yaml.safe_load(patch["patch"])
        assert body.get("$patch") == "delete", (
            f"{directory}: only `$patch: delete` patches are understood by this test's builder"
        )
        remaining = [doc for doc in docs if _key(doc) != _key(body)]
        assert len(remaining) == len(docs) - 1, f"{directory}: deletes {_key(body)}, not there"
        docs = remaining
    return docs


def _one(docs: list[Doc], kind: str, name: str) -> Doc:
    matches = [doc for doc in docs if _key(doc) == (kind, name)]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def _workloads(docs: list[Doc]) -> list[Doc]:
    return [doc for doc in docs if doc["kind"] in ("Deployment", "StatefulSet")]


def _pod_labels(workload: Doc) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


def _selects(selector: Doc, labels: dict[str, str]) -> bool:
    """Whether a label selector (``matchLabels`` form, or a Service's plain map) matches."""
    assert "matchExpressions" not in selector, "matchExpressions are not checked here"
    wanted = selector.get("matchLabels", selector)
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def _selected(docs: list[Doc], selector: Doc) -> list[str]:
    return [w["metadata"]["name"] for w in _workloads(docs) if _selects(selector, _pod_labels(w))]


def _container(workload: Doc) -> Doc:
    [container] = workload["spec"]["template"]["spec"]["containers"]
    return container


def _container_port(container: Doc, port: int | str) -> int:
    """A port given by number or by name, as the container's port number."""
    for entry in container.get("ports", []):
        if port in (entry["containerPort"], entry.get("name")):
            number: int = entry["containerPort"]
            return number
    raise AssertionError(f"container {container['name']} has no port {port!r}")


def _env_values(container: Doc) -> dict[str, str]:
    """The container's variables as the pod sees them (downward API from samples)."""
    values: dict[str, str] = {}
    for var in container.get("env", []):
        if "value" in var:
            values[var["name"]] = VAR_REF.sub(lambda m: values.get(m[1], m[0]), var["value"])
        else:
            field = var["valueFrom"]["fieldRef"]["fieldPath"]
            values[var["name"]] = FIELD_REF_SAMPLES[field]
    return values


def _args(container: Doc) -> list[str]:
    """The container's args with ``$(VAR)`` references expanded, as the kubelet does."""
    env = _env_values(container)
    args = [str(arg) for arg in container["args"]]
    for arg in args:
        for name in VAR_REF.findall(arg):
            # The kubelet leaves an undefined reference as it is: a silent misconfiguration.
            assert name in env, f"{container['name']}: $({name}) is not defined in env"
    return [VAR_REF.sub(lambda m: env[m[1]], arg) for arg in args]


def _parse(container: Doc) -> Any:
    """The container's command line as ``wsserver`` itself parses it."""
    args = _args(container)
    try:
        return build_parser().parse_args(args)
    except SystemExit:
        pytest.fail(f"`wsserver {' '.join(args)}` is not a valid wsserver command line")


def _worker_settings(container: Doc) -> Settings:
    """The worker's settings: ``WSSERVER_*`` variables, then flags, as ``wsserver serve``."""
    namespace = _parse(container)
    assert namespace.command == "serve"
    values: dict[str, Any] = {
        name.removeprefix(ENV_PREFIX).lower(): value
        for name, value in _env_values(container).items()
        if name.startswith(ENV_PREFIX)
    }
    for name in Settings.model_fields:
        if getattr(namespace, name) is not None:
            values[name] = getattr(namespace, name)
    return Settings.model_validate(values, strict=False)


def _pre_stop_seconds(container: Doc) -> float:
    pre_stop = container["lifecycle"]["preStop"]
    if "sleep" in pre_stop:
        return float(pre_stop["sleep"]["seconds"])
    command = pre_stop["exec"]["command"]
    assert command[0] == "sleep", f"unexpected preStop hook {command}"
    return float(command[1])


@pytest.fixture(scope="module")
def default() -> list[Doc]:
    """What ``kubectl apply -k k8s/`` applies."""
    return _build(K8S)


@pytest.fixture(scope="module")
def overlay() -> list[Doc]:
    """What ``kubectl apply -k k8s/ingress-nginx/`` applies."""
    return _build(OVERLAY)


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
        for path in _manifest_files()
        for doc in _load(path)
    ]


def test_there_are_manifests() -> None:
    assert len(_manifest_files()) >= 10
    assert all(doc["apiVersion"] and doc["kind"] for p in _manifest_files() for doc in _load(p))


@pytest.mark.parametrize("version", _checked_versions())
@pytest.mark.parametrize("doc", _manifest_documents())
def test_document_is_valid_kubernetes(doc: Doc, version: str) -> None:
    # strict: unknown fields (a misspelt key that kubectl would drop or reject) fail too.
    kubernetes_validate.validate(doc, version, strict=True)


def test_validation_is_strict() -> None:
    """The check above would catch a misspelt field."""
    [worker] = [d for d in _load(K8S / "base" / "worker-deployment.yaml")]
    broken = json.loads(json.dumps(worker))
    broken["spec"]["template"]["spec"]["terminationGracePeriod"] = 40
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, _checked_versions()[-1], strict=True)


# --- kustomizations --------------------------------------------------------------------


@pytest.mark.parametrize("path", _kustomization_files(), ids=lambda p: str(p.relative_to(K8S)))
def test_kustomization_lists_existing_resources(path: Path) -> None:
    kustomization = _kustomization(path.parent)
    assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
    assert kustomization["kind"] == "Kustomization"
    assert kustomization["resources"]
    for entry in kustomization["resources"]:
        target = path.parent / entry
        assert target.is_file() or (target / KUSTOMIZATION).is_file(), f"{path}: {entry}"


def test_every_manifest_is_listed_exactly_once() -> None:
    listed: list[Path] = []
    for path in _kustomization_files():
        for entry in _kustomization(path.parent)["resources"]:
            target = (path.parent / entry).resolve()
            if target.is_file():
                listed.append(target)
    assert sorted(listed) == sorted(p.resolve() for p in _manifest_files())


def test_default_deployment_leaves_out_the_ingress_nginx_alternative(
    default: list[Doc], overlay: list[Doc]
) -> None:
    default_files = _files(K8S)
    assert not any(OVERLAY.resolve() in p.parents for p in default_files)
    assert (OVERLAY / "ingress.yaml").resolve() in _files(OVERLAY)
    assert not [d for d in default if d["kind"] == "Ingress"]
    assert [d["metadata"]["name"] for d in overlay if d["kind"] == "Ingress"] == ["wsserver"]
    # The alternative replaces the router; everything else is the same.
    router_parts = {
        ("Deployment", ROUTER),
        ("Service", "wsserver"),
        ("PodDisruptionBudget", ROUTER),
        ("NetworkPolicy", ROUTER),
    }
    assert router_parts <= set(map(_key, default))
    assert set(map(_key, overlay)) == (set(map(_key, default)) - router_parts) | {
        ("Ingress", "wsserver")
    }


def test_images_are_set_by_the_kustomization(default: list[Doc]) -> None:
    images = {i["name"] for i in _kustomization(K8S / "base").get("images", [])}
    for workload in _workloads(default):
        image = _container(workload)["image"]
        assert image in images or image.startswith("redis:"), image


def test_no_duplicate_resources(default: list[Doc], overlay: list[Doc]) -> None:
    for docs in (default, overlay):
        keys = [_key(doc) for doc in docs]
        assert len(keys) == len(set(keys))


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
@pytest.mark.parametrize("directory", [K8S, OVERLAY], ids=["default", "ingress-nginx"])
def test_kustomize_builds_what_the_checks_read(directory: Path) -> None:
    """kubectl's kustomize agrees with this file's builder (and accepts the layout)."""
    out = subprocess.run(
        ["kubectl", "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    built = [doc for doc in yaml.safe_load_all(out) if doc is not None]
    assert sorted(map(_key, built)) == sorted(map(_key, _build(directory)))
    namespaced = [d for d in built if d["kind"] != "Namespace"]
    assert {d["metadata"].get("namespace") for d in namespaced} == {"wsserver"}


# --- workers ---------------------------------------------------------------------------


def test_worker_command_line_is_valid(default: list[Doc]) -> None:
    container = _container(_one(default, "Deployment", WORKER))
    settings = _worker_settings(container)
    assert settings.host == "0.0.0.0"
    assert settings.port == _container_port(container, "ws") == 8765
    # Named after the pod, reachable at the pod's IP: what the router dials.
    assert settings.worker_id == FIELD_REF_SAMPLES["metadata.name"]
    assert settings.advertise_url == f"ws://{FIELD_REF_SAMPLES['status.podIP']}:{settings.port}"
    assert settings.max_sessions > 0
    env = {var["name"]: var for var in container["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"


def test_worker_grace_period_covers_pre_stop_and_drain(default: list[Doc]) -> None:
    pod = _one(default, "Deployment", WORKER)["spec"]["template"]["spec"]
    container = pod["containers"][0]
    settings = _worker_settings(container)
    pre_stop = _pre_stop_seconds(container)
    assert pre_stop > 0
    assert settings.drain_timeout > 0
    # The grace period counts from the start of preStop; SIGKILL must not cut the drain
    # or the 1012 closing handshakes that follow it.
    assert pod["terminationGracePeriodSeconds"] > pre_stop + settings.drain_timeout
    assert pod["terminationGracePeriodSeconds"] >= (
        pre_stop + settings.drain_timeout + settings.close_timeout
    )


def test_worker_probes(default: list[Doc]) -> None:
    container = _container(_one(default, "Deployment", WORKER))
    port = _worker_settings(container).port
    expected = {
        "startupProbe": "/healthz",
        "livenessProbe": "/healthz",
        "readinessProbe": "/readyz",
    }
    for probe, path in expected.items():
        http = container[probe]["httpGet"]
        assert http["path"] == path, probe
        assert _container_port(container, http["port"]) == port, probe


def test_worker_rollout_keeps_capacity(default: list[Doc]) -> None:
    worker = _one(default, "Deployment", WORKER)
    rolling = worker["spec"]["strategy"]["rollingUpdate"]
    assert (rolling["maxSurge"], rolling["maxUnavailable"]) == (1, 0)
    # The autoscaler owns the replica count; a count here would be re-applied on deploy.
    assert "replicas" not in worker["spec"]


def test_worker_resources(default: list[Doc]) -> None:
    resources = _container(_one(default, "Deployment", WORKER))["resources"]
    assert resources["requests"]["cpu"] == "500m"
    assert resources["limits"]["cpu"] == "1"
    assert resources["requests"]["memory"] == "512Mi"
    assert resources["limits"]["memory"] == "1Gi"


def test_worker_service_is_headless(default: list[Doc]) -> None:
    service = _one(default, "Service", WORKER)
    assert service["spec"]["clusterIP"] == HEADLESS
    assert _selected(default, service["spec"]["selector"]) == [WORKER]
    [port] = service["spec"]["ports"]
    container = _container(_one(default, "Deployment", WORKER))
    assert port["port"] == _container_port(container, port["targetPort"]) == 8765


# --- autoscaling and disruption budgets ------------------------------------------------


def test_hpa_scales_the_workers_gently(default: list[Doc]) -> None:
    hpa = _one(default, "HorizontalPodAutoscaler", WORKER)
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"], target["name"]) == (
        "apps/v1",
        "Deployment",
        WORKER,
    )
    _one(default, "Deployment", WORKER)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 20)
    [metric] = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert metric["resource"]["target"] == {"type": "Utilization", "averageUtilization": 60}
    # Utilization is relative to the request: without one the HPA cannot compute it.
    assert _container(_one(default, "Deployment", WORKER))["resources"]["requests"]["cpu"]
    down = hpa["spec"]["behavior"]["scaleDown"]
    assert down["stabilizationWindowSeconds"] >= 300
    assert down["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 60}]


@pytest.mark.parametrize("name", [WORKER, ROUTER])
def test_pdb_selects_its_pods(default: list[Doc], name: str) -> None:
    pdb = _one(default, "PodDisruptionBudget", name)
    assert _selected(default, pdb["spec"]["selector"]) == [name]
    assert pdb["spec"]["maxUnavailable"] == 1


def test_router_pdb_keeps_one_router(default: list[Doc]) -> None:
    router = _one(default, "Deployment", ROUTER)
    pdb = _one(default, "PodDisruptionBudget", ROUTER)
    assert router["spec"]["replicas"] - pdb["spec"]["maxUnavailable"] >= 1


# --- router ----------------------------------------------------------------------------


def test_router_command_line(default: list[Doc]) -> None:
    router = _one(default, "Deployment", ROUTER)
    assert router["spec"]["replicas"] == 2
    container = _container(router)
    namespace = _parse(container)
    assert namespace.command == "router"
    assert namespace.host == "0.0.0.0"
    assert int(namespace.port) == _container_port(container, "http") == 8080


def test_router_probes(default: list[Doc]) -> None:
    container = _container(_one(default, "Deployment", ROUTER))
    port = int(_parse(container).port)
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        http = container[probe]["httpGet"]
        assert http["path"] == "/healthz", probe
        assert _container_port(container, http["port"]) == port, probe


def test_router_service(default: list[Doc]) -> None:
    service = _one(default, "Service", "wsserver")
    assert service["spec"]["type"] == "ClusterIP"
    assert "sessionAffinity" not in service["spec"]
    assert _selected(default, service["spec"]["selector"]) == [ROUTER]
    [port] = service["spec"]["ports"]
    container = _container(_one(default, "Deployment", ROUTER))
    assert port["port"] == 80
    assert _container_port(container, port["targetPort"]) == 8080


# --- Redis and the store URLs ----------------------------------------------------------


def test_redis_is_a_persistent_statefulset(default: list[Doc]) -> None:
    statefulset = _one(default, "StatefulSet", REDIS)
    service = _one(default, "Service", REDIS)
    assert statefulset["spec"]["serviceName"] == REDIS
    assert service["spec"]["clusterIP"] == HEADLESS
    assert _selected(default, service["spec"]["selector"]) == [REDIS]
    container = _container(statefulset)
    assert container["image"].startswith("redis:7")
    args = [str(a) for a in container["args"]]
    assert args[args.index("--appendonly") + 1] == "yes"
    data_dir = args[args.index("--dir") + 1]
    [claim] = statefulset["spec"]["volumeClaimTemplates"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == data_dir


@pytest.mark.parametrize("name", [WORKER, ROUTER])
def test_store_url_points_at_the_redis_service(default: list[Doc], name: str) -> None:
    container = _container(_one(default, "Deployment", name))
    namespace = _parse(container)
    store = namespace.store
    if store is None:  # the flag wins; else the variable
        store = _env_values(container)[f"{ENV_PREFIX}STORE"]
    url = urlsplit(store)
    assert url.scheme == "redis"
    service = _one(default, "Service", url.hostname or "")
    [port] = service["spec"]["ports"]
    assert url.port == port["port"] == 6379
    redis = _container(_one(default, "StatefulSet", REDIS))
    assert _container_port(redis, port["targetPort"]) == 6379


# --- network policies ------------------------------------------------------------------


def _policy(docs: list[Doc], name: str) -> Doc:
    policy = _one(docs, "NetworkPolicy", name)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    return policy


def _rule_ports(rule: Doc) -> list[int]:
    return [p["port"] for p in rule["ports"]]


def test_every_network_policy_selects_one_workload(default: list[Doc]) -> None:
    policies = [d for d in default if d["kind"] == "NetworkPolicy"]
    selected = sorted(n for p in policies for n in _selected(default, p["spec"]["podSelector"]))
    assert selected == sorted([WORKER, ROUTER, REDIS])


def test_workers_accept_only_the_router_and_ingress_nginx(default: list[Doc]) -> None:
    policy = _policy(default, WORKER)
    assert _selected(default, policy["spec"]["podSelector"]) == [WORKER]
    [rule] = policy["spec"]["ingress"]
    port = _worker_settings(_container(_one(default, "Deployment", WORKER))).port
    assert _rule_ports(rule) == [port]
    peers = rule["from"]
    pod_peers = [p for p in peers if "namespaceSelector" not in p]
    namespace_peers = [p for p in peers if "namespaceSelector" in p]
    assert [_selected(default, p["podSelector"]) for p in pod_peers] == [[ROUTER]]
    [ingress_nginx] = namespace_peers
    assert ingress_nginx["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "ingress-nginx"
    }


def test_redis_accepts_only_workers_and_routers(default: list[Doc]) -> None:
    policy = _policy(default, "wsserver-redis")
    assert _selected(default, policy["spec"]["podSelector"]) == [REDIS]
    [rule] = policy["spec"]["ingress"]
    assert _rule_ports(rule) == [6379]
    assert all("namespaceSelector" not in peer for peer in rule["from"])
    reached = sorted(n for peer in rule["from"] for n in _selected(default, peer["podSelector"]))
    assert reached == sorted([WORKER, ROUTER])


def test_router_accepts_anyone_on_its_port(default: list[Doc]) -> None:
    policy = _policy(default, ROUTER)
    assert _selected(default, policy["spec"]["podSelector"]) == [ROUTER]
    [rule] = policy["spec"]["ingress"]
    assert "from" not in rule
    container = _container(_one(default, "Deployment", ROUTER))
    # Policies see pod ports, not the Service's port 80.
    assert _rule_ports(rule) == [_container_port(container, "http")]


# --- pod hardening ---------------------------------------------------------------------


@pytest.mark.parametrize("name", [WORKER, ROUTER, REDIS])
def test_pods_are_hardened(default: list[Doc], name: str) -> None:
    [workload] = [w for w in _workloads(default) if w["metadata"]["name"] == name]
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
    namespace = _one(default, "Namespace", "wsserver")
    labels = namespace["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert _kustomization(K8S / "base")["namespace"] == "wsserver"
    assert all("namespace" not in d["metadata"] for p in _manifest_files() for d in _load(p))


# --- the ingress-nginx alternative -----------------------------------------------------


def test_ingress_hashes_on_the_session_id(overlay: list[Doc]) -> None:
    ingress = _one(overlay, "Ingress", "wsserver")
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
    ingress = _one(overlay, "Ingress", "wsserver")
    backends = [
        path["backend"]["service"]
        for rule in ingress["spec"]["rules"]
        for path in rule["http"]["paths"]
    ]
    service = _one(overlay, "Service", WORKER)
    ports = {p["port"] for p in service["spec"]["ports"]}
    assert backends
    for backend in backends:
        assert backend["name"] == WORKER
        assert backend["port"]["number"] in ports
    assert not [w for w in _workloads(overlay) if w["metadata"]["name"] == ROUTER]


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
    assert re.search(r"pip install \.(\s|$)", runs)
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
        pod = _one(default, "Deployment", name)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsUser"] == int(uid)
    exposed = {int(p) for word, args in stage if word == "EXPOSE" for p in args.split()}
    assert exposed == {8765, 8080}
    [entrypoint] = [json.loads(args) for word, args in stage if word == "ENTRYPOINT"]
    [cmd] = [json.loads(args) for word, args in stage if word == "CMD"]
    assert entrypoint == ["wsserver"]
    assert cmd == ["serve", "--host", "0.0.0.0"]
    assert build_parser().parse_args(cmd).command == "serve"
