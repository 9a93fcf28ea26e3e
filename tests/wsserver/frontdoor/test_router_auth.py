"""The router's front door: it checks credentials before contacting any worker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from tests.processes import eventually
from tests.redis_server import free_port
from tests.wsserver.conftest import StartServer
from tests.wsserver.frontdoor.credentials import Credentials
from tests.wsserver.frontdoor.http import connect_as, http, mint
from wsserver.router.server import Router, RouterSettings

StartRouter = Callable[..., Awaitable[Router]]


@pytest.fixture
async def start_router(redis_url: str) -> AsyncIterator[StartRouter]:
    started: list[Router] = []

    async def start(**fields: Any) -> Router:
        router = Router(RouterSettings(port=0, store=redis_url, refresh_interval=0.05, **fields))
        await router.start()
        started.append(router)
        return router

    yield start
    for router in started:
        await router.stop()


async def test_router_refuses_before_contacting_a_worker(
    start_server: StartServer, start_router: StartRouter, creds: Credentials, redis_url: str
) -> None:
    worker = await start_server(**creds.settings(), store=redis_url, registry_interval=0.05)
    router = await start_router(**creds.settings())
    await eventually(lambda: len(router.workers) == 1)
    url, base = f"ws://127.0.0.1:{router.port}", f"http://127.0.0.1:{router.port}"
    for credential in ({}, {"key": "wsk_wrong"}, {"token": "wct_x.y"}):
        with pytest.raises(InvalidStatus) as caught:
            await connect_as(url, **credential)
        response = caught.value.response
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith('Bearer realm="wsserver"')
    with pytest.raises(InvalidStatus) as caught:
        await connect_as(f"{url}/?access_token=abc", key=creds.alice_key)
    assert caught.value.response.status_code == 401
    assert router.counters["unauthorized"] == 4
    assert router.counters["connections_relayed"] == 0
    assert worker.stats()["connections"] == 0
    # A token minted at the router opens a session on the worker, which checks it again.
    token = await mint(base, creds.alice_key)
    client = await connect_as(url, token=token)
    ready = await client.start()
    assert worker.sessions[ready["session_id"]].principal == "alice"
    await client.close()


async def test_router_endpoints(start_router: StartRouter, creds: Credentials) -> None:
    admin_port = free_port()
    router = await start_router(**creds.settings(), admin_port=admin_port)
    base = f"http://127.0.0.1:{router.port}"
    assert (await http(base, "/healthz"))[0] == 200
    assert (await http(base, "/readyz"))[0] == 503  # no workers: open, and honest
    assert (await http(base, "/stats"))[0] == 401
    assert (await http(base, "/stats", key=creds.bob_key))[0] == 403
    status, body, _ = await http(base, "/stats", key=creds.admin_key)
    assert status == 200 and "live_workers" in body
    admin = f"http://127.0.0.1:{admin_port}"
    assert (await http(admin, "/stats"))[0] == 200
    assert (await http(admin, "/healthz"))[0] == 200
    assert (await http(admin, "/v1/client_tokens", method="POST"))[0] == 404
