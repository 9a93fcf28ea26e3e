"""Reading the manifests under ``k8s/`` as Kubernetes and ``wsserver`` would: the
kustomizations resolved by a small builder, the containers' args and variables expanded,
their command lines parsed by the ``wsserver`` CLI itself.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml

from wsserver.cli.main import build_parser
from wsserver.frontdoor.api_keys import key_line, new_api_key
from wsserver.router.server import RouterSettings
from wsserver.worker.settings import Settings

Doc = dict[str, Any]

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
OVERLAY = K8S / "ingress-nginx"
KUSTOMIZATION = "kustomization.yaml"

WORKER = "wsserver-worker"
ROUTER = "wsserver-router"
REDIS = "redis"
HEADLESS = "None"
CREDENTIALS = "wsserver-credentials"
SITE = "wsserver-site"
CREDENTIALS_DIR = K8S / "base" / "credentials"
"""Where the operator puts the credential files the Secret is generated from."""
MONITORING = K8S / "monitoring"
SCRAPE_CONFIG = MONITORING / "prometheus" / "scrape-config.yml"
"""A prometheus.yml snippet, not a Kubernetes resource."""
CUSTOM_KINDS = {"ServiceMonitor"}
"""Kinds of CRDs, which the Kubernetes schemas do not know (test_monitoring.py checks them)."""

# What a pod's downward-API variables resolve to, for reading the args as a pod would.
FIELD_REF_SAMPLES = {"metadata.name": "wsserver-worker-5d8c9-x7k2q", "status.podIP": "10.1.2.3"}
VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def load(path: Path) -> list[Doc]:
    """The YAML documents of one file."""
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    for doc in docs:
        assert isinstance(doc, dict), f"{path}: a document is not a mapping"
    return docs


def yaml_files() -> list[Path]:
    """Every YAML file under ``k8s/``."""
    return sorted(p for p in K8S.rglob("*") if p.suffix in (".yaml", ".yml"))


def kustomization_files() -> list[Path]:
    """Every ``kustomization.yaml`` under ``k8s/``."""
    return [p for p in yaml_files() if p.name == KUSTOMIZATION]


def manifest_files() -> list[Path]:
    """Every YAML file under ``k8s/`` that holds resources."""
    return [p for p in yaml_files() if p.name != KUSTOMIZATION and p != SCRAPE_CONFIG]


def read_kustomization(directory: Path) -> Doc:
    """The kustomization of a directory."""
    [doc] = load(directory / KUSTOMIZATION)
    return doc


def key(doc: Doc) -> tuple[str, str]:
    """(kind, name): what identifies a resource within one namespace."""
    return doc["kind"], doc["metadata"]["name"]


def resource_files(directory: Path) -> set[Path]:
    """Every manifest file a kustomization directory pulls in, through its bases."""
    found: set[Path] = set()
    for entry in read_kustomization(directory).get("resources", []):
        path = (directory / entry).resolve()
        found |= resource_files(path) if path.is_dir() else {path}
    return found


def generator_files(generator: Doc) -> dict[str, str]:
    """A generator's ``files``: data key → path relative to its kustomization."""
    found: dict[str, str] = {}
    for entry in generator.get("files", []):
        name, equals, path = entry.partition("=")
        found[name if equals else Path(entry).name] = path if equals else entry
    return found


def _generated(directory: Path) -> list[Doc]:
    """The Secrets and ConfigMaps of a kustomization's generators, named without the
    hash suffix kustomize adds (unless ``disableNameSuffixHash``). File contents are not
    read: the credential files are the operator's and are not in the repository."""
    spec = read_kustomization(directory)
    docs: list[Doc] = []
    for kind, field in (("Secret", "secretGenerator"), ("ConfigMap", "configMapGenerator")):
        for generator in spec.get(field, []):
            data = dict.fromkeys(generator_files(generator), "")
            for literal in generator.get("literals", []):
                name, _, value = literal.partition("=")
                data[name] = value
            docs.append({"apiVersion": "v1", "kind": kind, "metadata": {"name": generator["name"]}})
            docs[-1]["data"] = data
    return docs


def build(directory: Path) -> list[Doc]:
    """The documents a kustomization directory yields: a minimal stand-in for kustomize.

    It follows ``resources`` (files and base directories), adds what the Secret and
    ConfigMap generators make, and applies ``$patch: delete`` patches, the only kind these
    manifests use; ``namespace`` and ``images`` do not change what the checks look at.
    """
    spec = read_kustomization(directory)
    docs: list[Doc] = []
    for entry in spec.get("resources", []):
        path = (directory / entry).resolve()
        docs.extend(build(path) if path.is_dir() else load(path))
    docs.extend(_generated(directory))
    for patch in spec.get("patches", []):
        body = yaml.safe_load(patch["patch"])
        assert body.get("$patch") == "delete", (
            f"{directory}: only `$patch: delete` patches are understood by this test's builder"
        )
        remaining = [doc for doc in docs if key(doc) != key(body)]
        assert len(remaining) == len(docs) - 1, f"{directory}: deletes {key(body)}, not there"
        docs = remaining
    return docs


def one(docs: list[Doc], kind: str, name: str) -> Doc:
    """The one resource of that kind and name."""
    matches = [doc for doc in docs if key(doc) == (kind, name)]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def workloads(docs: list[Doc]) -> list[Doc]:
    """The Deployments and StatefulSets."""
    return [doc for doc in docs if doc["kind"] in ("Deployment", "StatefulSet")]


def pod_labels(workload: Doc) -> dict[str, str]:
    """The labels of a workload's pods."""
    labels: dict[str, str] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


def selects(selector: Doc, labels: dict[str, str]) -> bool:
    """Whether a label selector (``matchLabels`` form, or a Service's plain map) matches."""
    assert "matchExpressions" not in selector, "matchExpressions are not checked here"
    wanted = selector.get("matchLabels", selector)
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def selected_names(docs: list[Doc], selector: Doc) -> list[str]:
    """The names of the workloads whose pods a selector matches."""
    return [w["metadata"]["name"] for w in workloads(docs) if selects(selector, pod_labels(w))]


def only_container(workload: Doc) -> Doc:
    """A workload's one container."""
    [found] = workload["spec"]["template"]["spec"]["containers"]
    return found


def container_port(spec: Doc, port: int | str) -> int:
    """A port given by number or by name, as the container's port number."""
    for entry in spec.get("ports", []):
        if port in (entry["containerPort"], entry.get("name")):
            number: int = entry["containerPort"]
            return number
    raise AssertionError(f"container {spec['name']} has no port {port!r}")


@functools.cache
def _config_maps() -> dict[str, dict[str, str]]:
    """The ConfigMaps' data (both deployments share base's)."""
    return {
        doc["metadata"]["name"]: doc.get("data", {})
        for doc in build(K8S)
        if doc["kind"] == "ConfigMap"
    }


def env_values(spec: Doc) -> dict[str, str]:
    """The container's variables as the pod sees them (downward API from samples)."""
    values: dict[str, str] = {}
    for var in spec.get("env", []):
        if "value" in var:
            values[var["name"]] = VAR_REF.sub(lambda m: values.get(m[1], m[0]), var["value"])
        elif "configMapKeyRef" in var["valueFrom"]:
            ref = var["valueFrom"]["configMapKeyRef"]
            data = _config_maps().get(ref["name"], {})
            assert ref["key"] in data, f"{spec['name']}: no ConfigMap key {ref}"
            values[var["name"]] = data[ref["key"]]
        else:
            field = var["valueFrom"]["fieldRef"]["fieldPath"]
            values[var["name"]] = FIELD_REF_SAMPLES[field]
    return values


def expanded_args(spec: Doc) -> list[str]:
    """The container's args with ``$(VAR)`` references expanded, as the kubelet does."""
    env = env_values(spec)
    raw = [str(arg) for arg in spec["args"]]
    for arg in raw:
        for name in VAR_REF.findall(arg):
            # The kubelet leaves an undefined reference as it is: a silent misconfiguration.
            assert name in env, f"{spec['name']}: $({name}) is not defined in env"
    return [VAR_REF.sub(lambda m: env[m[1]], arg) for arg in raw]


def parse(spec: Doc) -> Any:
    """The container's command line as ``wsserver`` itself parses it."""
    return parse_arguments(expanded_args(spec))


def parse_arguments(arguments: list[str]) -> Any:
    """A command line as ``wsserver`` itself parses it."""
    try:
        return build_parser().parse_args(arguments)
    except SystemExit:
        pytest.fail(f"`wsserver {' '.join(arguments)}` is not a valid wsserver command line")


def relocated(spec: Doc, value: str, root: Path) -> str:
    """``value`` with a path inside one of the container's mounts moved under ``root``."""
    for mount in spec.get("volumeMounts", []):
        path = mount["mountPath"].rstrip("/")
        if value == path or value.startswith(path + "/"):
            return str(root / value.lstrip("/"))
    return value


def cli_settings(spec: Doc, root: Path | None = None) -> Settings | RouterSettings:
    """The settings ``wsserver serve`` or ``wsserver router`` builds from the container:
    its flags over its ``WSSERVER_*`` (``WSSERVER_ROUTER_*``) variables, by the same
    ``from_env`` the CLI calls. With ``root``, paths in the mounts are read under it."""
    arguments, env = expanded_args(spec), env_values(spec)
    if root is not None:
        arguments = [relocated(spec, arg, root) for arg in arguments]
        env = {name: relocated(spec, value, root) for name, value in env.items()}
    namespace = parse_arguments(arguments)
    kinds: dict[str, type[Settings] | type[RouterSettings]] = {
        "serve": Settings,
        "router": RouterSettings,
    }
    assert namespace.command in kinds, f"{spec['name']} runs `wsserver {namespace.command}`"
    cls = kinds[namespace.command]
    overrides = {name: getattr(namespace, name) for name in cls.model_fields}
    # The pod's environment only: the test runner's own WSSERVER_* must not leak in.
    with mock.patch.dict(os.environ, env, clear=True):
        return cls.from_env(overrides)


def worker_settings(spec: Doc) -> Settings:
    """The worker's settings, as ``wsserver serve`` reads them."""
    settings = cli_settings(spec)
    assert isinstance(settings, Settings), f"{spec['name']} does not run `wsserver serve`"
    return settings


def pre_stop_seconds(spec: Doc) -> float:
    """How long the container's preStop hook waits."""
    pre_stop = spec["lifecycle"]["preStop"]
    if "sleep" in pre_stop:
        return float(pre_stop["sleep"]["seconds"])
    command = pre_stop["exec"]["command"]
    assert command[0] == "sleep", f"unexpected preStop hook {command}"
    return float(command[1])


def dummy_credentials(directory: Path) -> dict[str, str]:
    """Write credential files like the operator's into ``directory`` (throwaway values:
    a fresh key for a backend and an admin, a fresh client-token secret); the keys."""
    directory.mkdir(parents=True, exist_ok=True)
    keys = {"backend": new_api_key(), "ops": new_api_key()}
    lines = [key_line("backend", keys["backend"]), key_line("ops", keys["ops"], admin=True)]
    (directory / "api-keys").write_text("\n".join(lines) + "\n")
    (directory / "client-token-secret").write_text(secrets.token_urlsafe(48) + "\n")
    return keys


def copy_of_k8s(destination: Path, *, credentials: bool) -> Path:
    """A copy of ``k8s/`` without whatever credential files this checkout holds, with
    dummy ones if ``credentials``; the copy's root."""
    root = destination / "k8s"
    shutil.copytree(K8S, root)
    copied = root / CREDENTIALS_DIR.relative_to(K8S)
    for path in copied.iterdir():
        if path.name != ".gitignore":
            path.unlink()
    if credentials:
        dummy_credentials(copied)
    return root
