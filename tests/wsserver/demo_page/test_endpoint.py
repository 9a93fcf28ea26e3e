"""The demo page on a real worker: its files, its headers, requests that try to leave its
folder, and the token endpoint with authentication off and on."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import WorkerProcess
from tests.wsserver.frontdoor.credentials import Credentials, make_credentials
from tests.wsserver.frontdoor.http import connect_as

PYPROJECT = (Path(__file__).parents[3] / "pyproject.toml").read_bytes()


def raw_request(base: str, line: str, *headers: str) -> tuple[int, dict[str, str], bytes]:
    """Send ``line`` byte for byte (no client normalizes it): status, headers, body."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        head = "\r\n".join([line, f"Host: {host}:{port}", *headers, "Connection: close", "", ""])
        sock.sendall(head.encode("latin-1"))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    top, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = top.decode("latin-1").split("\r\n")
    fields = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    return int(status_line.split()[1]), fields, body


@pytest.fixture(scope="module")
def open_worker() -> Iterator[WorkerProcess]:
    worker = WorkerProcess("--auth", "none", name="demo-open").start()
    yield worker
    worker.stop()


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> Credentials:
    return make_credentials(tmp_path_factory.mktemp("demo-credentials"))


def demo_worker_for_alice(creds: Credentials, name: str) -> WorkerProcess:
    """A started worker with authentication on whose demo page mints tokens for alice."""
    return WorkerProcess(
        "--api-keys-file", creds.keys_file,
        "--client-token-secret-file", creds.token_secret_file,
        "--demo-page", "on", "--demo-principal", "alice",
        name=name,
    ).start()  # fmt: skip


@pytest.fixture(scope="module")
def authed_worker(creds: Credentials) -> Iterator[WorkerProcess]:
    worker = demo_worker_for_alice(creds, "demo-authed")
    yield worker
    worker.stop()


def origin(worker: WorkerProcess) -> str:
    return f"Origin: {worker.http}"


def test_the_page_and_its_modules_are_served_with_safe_headers(open_worker: WorkerProcess) -> None:
    status, headers, _ = raw_request(open_worker.http, "GET / HTTP/1.1")
    assert (status, headers["location"]) == (302, "/demo/")
    status, headers, body = raw_request(open_worker.http, "GET /demo/ HTTP/1.1")
    assert status == 200 and b'<script type="module" src="app.js">' in body
    assert headers["content-type"] == "text/html; charset=utf-8"
    csp = headers["content-security-policy"]
    assert "script-src 'self' blob:;" in csp and "unsafe-inline" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert b"<script>" not in body, "no inline script"
    status, headers, body = raw_request(open_worker.http, "GET /demo/sdk/index.js HTTP/1.1")
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    assert b"SessionClient" in body


@pytest.mark.parametrize(
    "path",
    [
        "/demo/../pyproject.toml",
        "/demo/%2e%2e/pyproject.toml",
        "/demo/%2E%2E%2Fpyproject.toml",
        "/demo/..%2fpyproject.toml",
        "/demo/..%5cpyproject.toml",
        "/demo/..\\pyproject.toml",
        "/demo/sdk/../../../../pyproject.toml",
        "/demo//work/pyproject.toml",
        "/demo/%2fetc%2fpasswd",
        "/demo/app.js%00.html",
        "/demo/app.js\x00",
        "/demo/%00",
        "/demo/config.py",
        "/demo/__init__.py",
        "/demo/static_site.py",
        "/demo/app.js/",
        "/demo/APP.JS",
    ],
)
def test_no_path_leaves_the_static_folder(open_worker: WorkerProcess, path: str) -> None:
    status, _headers, body = raw_request(open_worker.http, f"GET {path} HTTP/1.1")
    assert status in (400, 404), (status, body[:200])
    assert PYPROJECT[:200] not in body and b"root:" not in body and b"import" not in body


def test_token_endpoint_with_authentication_off(open_worker: WorkerProcess) -> None:
    status, headers, body = raw_request(
        open_worker.http, "POST /demo/token HTTP/1.1", origin(open_worker)
    )
    assert (status, json.loads(body)) == (200, {"token": None, "auth": "none"})
    assert headers["cache-control"] == "no-store"
    assert raw_request(open_worker.http, "GET /demo/token HTTP/1.1", origin(open_worker))[0] == 405
    # No Origin (not a page), and an Origin off the allowlist (another site's page).
    assert raw_request(open_worker.http, "POST /demo/token HTTP/1.1")[0] == 403
    evil = raw_request(
        open_worker.http, "POST /demo/token HTTP/1.1", "Origin: https://evil.example"
    )
    assert evil[0] == 403 and b"token" not in evil[2]


async def test_token_endpoint_with_authentication_on_mints_a_short_lived_token(
    authed_worker: WorkerProcess,
) -> None:
    status, _headers, body = raw_request(
        authed_worker.http, "POST /demo/token HTTP/1.1", origin(authed_worker)
    )
    assert status == 201, body
    answer = json.loads(body)
    assert set(answer) == {"token", "expires_at"}
    client = await connect_as(authed_worker.url, token=answer["token"])
    ready = await client.start()
    assert ready["session_id"].startswith("sess_")
    await client.close()
    # The page itself needs no credential; everything else still does.
    assert raw_request(authed_worker.http, "GET /demo/ HTTP/1.1")[0] == 200
    assert raw_request(authed_worker.http, "GET /stats HTTP/1.1")[0] == 401


def test_auto_serves_no_page_where_authentication_is_on(creds: Credentials) -> None:
    worker = WorkerProcess(
        "--api-keys-file",
        creds.keys_file,
        "--client-token-secret-file",
        creds.token_secret_file,
        name="demo-auto",
    ).start()
    try:
        for line in ("GET /demo/ HTTP/1.1", "POST /demo/token HTTP/1.1"):
            status, _, body = raw_request(worker.http, line, origin(worker))
            assert status == 401 and b"<html" not in body
    finally:
        worker.stop()
