"""The front door of the manifests: every worker and router listens beyond loopback, so
each must get credentials (``--auth auto`` refuses to start otherwise), from the Secret
mounted where its flags point, the same for both (the router checks, then forwards; the
worker checks again); the site's origin; the admin listener on the pod's loopback only.
The containers' own settings are built as ``wsserver serve`` / ``wsserver router`` build
them and the real servers constructed on them, with dummy credential files.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.k8s.manifests import (
    CREDENTIALS,
    CREDENTIALS_DIR,
    FIELD_REF_SAMPLES,
    K8S,
    ROOT,
    ROUTER,
    SITE,
    WORKER,
    Doc,
    cli_settings,
    container_port,
    dummy_credentials,
    generator_files,
    one,
    only_container,
    read_kustomization,
    relocated,
    workloads,
)
from wsserver.frontdoor.addresses import (
    client_address,
    in_networks,
    parse_address,
    parse_networks,
)
from wsserver.frontdoor.client_tokens import ClientTokenSigner
from wsserver.frontdoor.config import FrontDoorSettings, is_loopback
from wsserver.frontdoor.origin import ANY, OriginPolicy
from wsserver.frontdoor.principal import Principal
from wsserver.router.server import Router, RouterSettings
from wsserver.worker.server import WorkerServer
from wsserver.worker.settings import Settings

IMAGE = "wsserver"
# Every wsserver container of each deployment.
WSSERVER_PODS = [("default", WORKER), ("default", ROUTER), ("ingress-nginx", WORKER)]
FIXTURES = {"default": "default", "ingress-nginx": "overlay"}
# Settings naming files the process reads: they must all come from a mounted Secret.
FILE_SETTINGS = (
    "api_keys_file",
    "jwt_secret_file",
    "jwt_jwks_file",
    "client_token_secret_file",
    "tls_cert",
    "tls_key",
    "worker_ca_file",
)


def _workload(request: pytest.FixtureRequest, deployment: str, name: str) -> tuple[list[Doc], Doc]:
    docs: list[Doc] = request.getfixturevalue(FIXTURES[deployment])
    return docs, one(docs, "Deployment", name)


def _mounted_secret_file(docs: list[Doc], workload: Doc, path: str) -> tuple[str, str]:
    """(Secret, key) that ``path`` in the workload's container is; fails if it is none."""
    pod = workload["spec"]["template"]["spec"]
    spec = only_container(workload)
    mounts = [
        m for m in spec.get("volumeMounts", []) if path.startswith(m["mountPath"].rstrip("/") + "/")
    ]
    assert len(mounts) == 1, f"{spec['name']}: {path} is in no volume (or in several)"
    [mount] = mounts
    assert mount.get("readOnly") is True, f"{spec['name']}: {mount['mountPath']} is writable"
    assert "subPath" not in mount, "a subPath mount never sees the Secret's updates"
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert "secret" in volume, f"{spec['name']}: {path} is not from a Secret"
    relative = path.removeprefix(mount["mountPath"].rstrip("/") + "/")
    items = {item["path"]: item["key"] for item in volume["secret"].get("items", [])}
    secret_key = items.get(relative, relative) if items else relative
    secret = one(docs, "Secret", volume["secret"]["secretName"])
    assert secret_key in secret["data"], f"Secret {secret['metadata']['name']} has no {secret_key}"
    return secret["metadata"]["name"], secret_key


def _credential_files(settings: FrontDoorSettings) -> dict[str, str]:
    return {name: getattr(settings, name) for name in FILE_SETTINGS if getattr(settings, name, "")}


def test_every_wsserver_pod_is_checked(default: list[Doc], overlay: list[Doc]) -> None:
    for deployment, docs in (("default", default), ("ingress-nginx", overlay)):
        running = {
            w["metadata"]["name"] for w in workloads(docs) if only_container(w)["image"] == IMAGE
        }
        assert running == {name for d, name in WSSERVER_PODS if d == deployment}


@pytest.mark.parametrize(("deployment", "name"), WSSERVER_PODS)
def test_every_wsserver_container_has_credentials(
    request: pytest.FixtureRequest, deployment: str, name: str
) -> None:
    docs, workload = _workload(request, deployment, name)
    settings = cli_settings(only_container(workload))
    # Beyond loopback with nothing configured, `--auth auto` refuses to start.
    assert not is_loopback(settings.host)
    assert settings.credentials_configured()
    assert settings.auth == "required"
    assert settings.auth_required(settings.host) is True
    assert settings.api_keys_file and settings.client_token_secret_file
    for path in _credential_files(settings).values():
        assert _mounted_secret_file(docs, workload, path)[0] == CREDENTIALS


def test_workers_and_routers_share_the_credentials(default: list[Doc]) -> None:
    """Whatever the router lets in, the worker must let in too (it checks again), and a
    client token minted by the router must verify on every worker."""
    worker = one(default, "Deployment", WORKER)
    router = one(default, "Deployment", ROUTER)
    mounted = [
        {
            field: _mounted_secret_file(default, workload, path)
            for field, path in _credential_files(cli_settings(only_container(workload))).items()
        }
        for workload in (worker, router)
    ]
    assert mounted[0] == mounted[1]


@pytest.mark.parametrize("name", [WORKER, ROUTER])
def test_the_credential_files_are_readable_by_the_pod_user_only(
    default: list[Doc], name: str
) -> None:
    pod = one(default, "Deployment", name)["spec"]["template"]["spec"]
    context = pod["securityContext"]
    [volume] = [v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == CREDENTIALS]
    mode = volume["secret"]["defaultMode"]
    # The files are root's; the process reads them through the pod's fsGroup.
    assert context["fsGroup"] == context["runAsGroup"]
    assert mode & 0o040, "the group cannot read the credential files"
    assert not mode & 0o007, "every user of the container can read the credential files"


def test_the_secret_is_made_from_files_the_operator_creates() -> None:
    """No credential ships with the repository: the Secret comes from files the operator
    makes (docs/DEPLOY.md, "Credentials"), which git ignores."""
    [generator] = [
        g for g in read_kustomization(K8S / "base")["secretGenerator"] if g["name"] == CREDENTIALS
    ]
    # A fixed name, so key rotation updates the mounted file in place (no restart).
    assert generator["options"]["disableNameSuffixHash"] is True
    assert "literals" not in generator
    sources = generator_files(generator)
    assert set(sources) == {"api-keys", "client-token-secret"}
    for source in sources.values():
        assert (K8S / "base" / source).parent == CREDENTIALS_DIR
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for source in sources.values():
        path = K8S / "base" / source
        ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", str(path)])
        assert ignored.returncode == 0, f"{path} is not git-ignored"
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "k8s"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert (CREDENTIALS_DIR / ".gitignore").is_file()
    assert {t for t in tracked if t.startswith("k8s/base/credentials/")} <= {
        "k8s/base/credentials/.gitignore"
    }
    for name in tracked:
        text = (ROOT / name).read_text(errors="replace")
        assert not re.search(r"wsk_[A-Za-z0-9_-]{20,}", text), f"{name} holds an API key"


@pytest.mark.parametrize(("deployment", "name"), WSSERVER_PODS)
def test_the_site_origin_comes_from_the_config_map(
    request: pytest.FixtureRequest, deployment: str, name: str
) -> None:
    docs, workload = _workload(request, deployment, name)
    settings = cli_settings(only_container(workload))
    site = one(docs, "ConfigMap", SITE)["data"]["allowed-origins"]
    assert settings.allowed_origins == site
    origins = [o.strip() for o in site.split(",")]
    # A list of the site's origins, never the loopback default nor any origin at all.
    assert origins and ANY not in origins
    assert all(origin.startswith("https://") for origin in origins)
    policy = OriginPolicy.from_text(settings.allowed_origins)
    assert policy.allows([origins[0]])
    assert not policy.allows(["https://evil.example"])


@pytest.mark.parametrize(("deployment", "name"), WSSERVER_PODS)
def test_the_admin_listener_is_on_the_pods_loopback(
    request: pytest.FixtureRequest, deployment: str, name: str
) -> None:
    """`/stats` and `/usage` without credentials: reachable by `kubectl port-forward`,
    never from the network, and no probe depends on it."""
    docs, workload = _workload(request, deployment, name)
    spec = only_container(workload)
    settings = cli_settings(spec)
    assert settings.admin_port > 0
    assert is_loopback(settings.admin_host)
    assert settings.admin_port not in {p["containerPort"] for p in spec["ports"]}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        port = container_port(spec, spec[probe]["httpGet"]["port"])
        assert port == settings.port != settings.admin_port
        assert spec[probe]["httpGet"]["path"] in ("/healthz", "/readyz"), probe
    policed = {
        port["port"]
        for policy in docs
        if policy["kind"] == "NetworkPolicy"
        for rule in policy["spec"]["ingress"]
        for port in rule.get("ports", [])
    }
    assert settings.admin_port not in policed


@pytest.mark.parametrize(("deployment", "name"), WSSERVER_PODS)
def test_forwarded_client_addresses_are_believed_from_the_cluster_only(
    request: pytest.FixtureRequest, deployment: str, name: str
) -> None:
    """A worker counts per-address quotas by the address the router (or ingress-nginx)
    forwards; the router by the one its ingress forwards. A pod's own address is trusted,
    a client's from outside the cluster is not."""
    _, workload = _workload(request, deployment, name)
    settings = cli_settings(only_container(workload))
    trusted = parse_networks(settings.trusted_proxies)
    pod_ip, client = FIELD_REF_SAMPLES["status.podIP"], "203.0.113.7"
    assert client_address(pod_ip, [client], trusted) == client
    assert client_address(client, ["198.51.100.9"], trusted) == client
    assert not in_networks(parse_address(client), trusted)


def _write_credentials(spec: Doc, root: Path) -> dict[str, str]:
    """Dummy credential files where the container's flags point, moved under ``root``;
    the API keys written (none if the flags point nowhere)."""
    directories = {
        Path(relocated(spec, path, root)).parent
        for path in _credential_files(cli_settings(spec)).values()
    }
    keys: dict[str, str] = {}
    for directory in directories:
        keys = dummy_credentials(directory)
    return keys


async def _worker_and_router(root: Path, default: list[Doc]) -> tuple[WorkerServer, Router]:
    worker_spec = only_container(one(default, "Deployment", WORKER))
    router_spec = only_container(one(default, "Deployment", ROUTER))
    worker = cli_settings(worker_spec, root)
    router = cli_settings(router_spec, root)
    assert isinstance(worker, Settings) and isinstance(router, RouterSettings)
    # Constructing them is where `wsserver serve` / `wsserver router` fail to start on a
    # bad front door (FrontDoorConfigError); listening needs nothing more of it.
    return WorkerServer(worker), Router(router)


async def test_worker_and_router_start_with_the_manifests_settings(
    default: list[Doc], tmp_path: Path
) -> None:
    worker_spec = only_container(one(default, "Deployment", WORKER))
    keys = _write_credentials(worker_spec, tmp_path)
    worker, router = await _worker_and_router(tmp_path, default)
    try:
        for server in (worker, router):
            authenticator = server.authenticator
            assert authenticator.required
            assert authenticator.keys is not None and len(authenticator.keys) == 2
            assert authenticator.tokens is not None
            for principal, key in keys.items():
                found = authenticator.authenticate(
                    authorization=f"Bearer {key}", subprotocols=None, query=""
                )
                assert isinstance(found, Principal) and found.id == principal
                assert found.admin == (principal == "ops")
            refused = authenticator.authenticate(authorization=None, subprotocols=None, query="")
            assert not isinstance(refused, Principal)
        # A token minted at the router (POST /v1/client_tokens) opens sessions on workers.
        assert isinstance(router.authenticator.tokens, ClientTokenSigner)
        token, _ = router.authenticator.tokens.mint("backend", ttl_s=60)
        found = worker.authenticator.authenticate(
            authorization=None, subprotocols=f"wsserver.v1.json, wsserver.token.{token}", query=""
        )
        assert isinstance(found, Principal) and found.id == "backend"
    finally:
        await router.registry.close()
        await worker.store.close()
