from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from tests.wsserver.frontdoor.credentials import Credentials, make_credentials
from wsserver.router.server import Router, RouterSettings

StartRouter = Callable[..., Awaitable[Router]]


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> Credentials:
    """Keys, secrets and a JWKS shared by a module's tests (RSA keys are slow to make)."""
    folder: Path = tmp_path_factory.mktemp("credentials")
    return make_credentials(folder)


@pytest.fixture
async def start_router(redis_url: str) -> AsyncIterator[StartRouter]:
    """In-process routers on free loopback ports, reading workers from the test Redis."""
    routers: list[Router] = []

    async def factory(**fields: object) -> Router:
        settings = RouterSettings.model_validate(
            {"port": 0, "store": redis_url, "refresh_interval": 0.05, **fields}
        )
        router = Router(settings)
        await router.start()
        routers.append(router)
        return router

    yield factory
    for router in routers:
        await router.stop()


def router_url(router: Router) -> str:
    """The ws:// URL of a started router."""
    return f"ws://127.0.0.1:{router.port}"
