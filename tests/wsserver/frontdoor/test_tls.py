"""TLS on the worker and the router, with a locally made CA: real wss:// handshakes.

The SDK talks wss:// to a worker, and through a TLS router to TLS workers (the router
verifies the workers' certificates against --worker-ca-file).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from tests.processes import eventually
from tests.wsserver.conftest import StartServer
from tests.wsserver.frontdoor.credentials import Credentials
from tests.wsserver.frontdoor.http import connect_as, http
from wsserver.client.session_client import SessionClient
from wsserver.router.server import Router, RouterSettings


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def pem_files(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder: Path = tmp_path_factory.mktemp("tls")
    cert = ca.issue_cert("127.0.0.1", "localhost")
    paths = {"cert": folder / "cert.pem", "key": folder / "key.pem", "ca": folder / "ca.pem"}
    cert.private_key_and_cert_chain_pem.write_to_path(str(paths["cert"]))
    cert.private_key_pem.write_to_path(str(paths["key"]))
    ca.cert_pem.write_to_path(str(paths["ca"]))
    return {name: str(path) for name, path in paths.items()}


@pytest.fixture(scope="module")
def client_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


@pytest.fixture
async def routers() -> AsyncIterator[list[Router]]:
    started: list[Router] = []
    yield started
    for router in started:
        await router.stop()


async def started_router(
    routers: list[Router], redis_url: str, pem_files: dict[str, str], **fields: Any
) -> Router:
    """A router that verifies wss:// workers against the test CA, once it sees one."""
    router = Router(
        RouterSettings(
            port=0,
            store=redis_url,
            refresh_interval=0.05,
            worker_ca_file=pem_files["ca"],
            **fields,
        )
    )
    await router.start()
    routers.append(router)
    await eventually(lambda: len(router.workers) == 1)
    return router


async def test_sdk_over_wss_to_a_worker(
    start_server: StartServer, pem_files: dict[str, str], client_context: ssl.SSLContext
) -> None:
    server = await start_server(tls_cert=pem_files["cert"], tls_key=pem_files["key"])
    assert server.advertise_url.startswith("wss://")
    url = f"wss://127.0.0.1:{server.port}"
    async with SessionClient(url, ssl=client_context) as client:
        result = await client.ask("hello over tls")
        assert result.status == "completed" and result.text
    # HTTPS endpoints too; a client that does not trust the CA gets nowhere.
    base = f"https://127.0.0.1:{server.port}"
    assert (await http(base, "/healthz", context=client_context))[0] == 200
    with pytest.raises(ssl.SSLCertVerificationError):
        await connect_as(url)


async def test_tls_router_to_tls_workers_with_keys(
    start_server: StartServer,
    routers: list[Router],
    pem_files: dict[str, str],
    client_context: ssl.SSLContext,
    creds: Credentials,
    redis_url: str,
) -> None:
    tls = {"tls_cert": pem_files["cert"], "tls_key": pem_files["key"]}
    auth = creds.settings()
    worker = await start_server(
        **auth, **tls, store=redis_url, registry_interval=0.05, worker_id="tls-worker"
    )
    router = await started_router(routers, redis_url, pem_files, linger_timeout=60, **auth, **tls)
    url = f"wss://127.0.0.1:{router.port}"
    # A client that waits as long as it takes for the server to end the TCP connection.
    client = await connect_as(url, key=creds.alice_key, ssl=client_context, close_timeout=60)
    ready = await client.start()
    assert worker.sessions[ready["session_id"]].principal == "alice"
    await client.send({"type": "response.create", "input": "through two tls hops"})
    done = await client.until("response.done")
    assert done["status"] == "completed"
    # The worker ends its side after the closing handshake; TLS has no half-close, so
    # the router must close the client's side too, or the client waits its 60 s.
    await asyncio.wait_for(client.close(), 15)
    assert router.counters["connections_relayed"] == 1


async def test_a_tls_workers_refusal_reaches_the_client_whole(
    start_server: StartServer,
    routers: list[Router],
    pem_files: dict[str, str],
    creds: Credentials,
    redis_url: str,
) -> None:
    # The worker answers 401 with a JSON body and closes at once. Over TLS its stream
    # has closed the transport by the time the router splices: the body must still go.
    tls = {"tls_cert": pem_files["cert"], "tls_key": pem_files["key"]}
    await start_server(
        **creds.settings(), **tls, store=redis_url, registry_interval=0.05, worker_id="tls-401"
    )
    router = await started_router(routers, redis_url, pem_files, auth="none")
    for _ in range(10):
        reader, writer = await asyncio.open_connection("127.0.0.1", router.port)
        writer.write(
            b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        async with asyncio.timeout(10):
            answer = await reader.read()
        writer.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 401 "), answer[:80]
        (length,) = [
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ]
        assert len(body) == length > 0, answer
    assert router.counters["worker_failures"] == 0
