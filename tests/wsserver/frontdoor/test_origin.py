"""The Origin allowlist: rules (pure), then on a real worker and a real router."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.frontdoor.conftest import StartRouter, router_url
from tests.wsserver.frontdoor.sources import connect_from, refused_from
from wsserver.frontdoor.origin import OriginPolicy, normalize_origin, parse_origins
from wsserver.router.server import RouterSettings
from wsserver.worker.settings import Settings

EVIL = "https://evil.example"
APP = "https://app.example.com"


# -- rules -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "canonical"),
    [
        ("https://App.Example.com", "https://app.example.com"),
        ("https://app.example.com:443", "https://app.example.com"),
        ("http://app.example.com:80/", "http://app.example.com"),
        ("https://app.example.com:8443", "https://app.example.com:8443"),
        ("http://[::1]:3000", "http://[::1]:3000"),
        ("null", "null"),
        ("app.example.com", None),
        ("https://app.example.com/path", None),
        ("https://user@app.example.com", None),
        ("https://app.example.com?x=1", None),
        ("https://app.example.com:99999", None),
        ("", None),
    ],
)
def test_origins_are_compared_in_canonical_form(origin: str, canonical: str | None) -> None:
    assert normalize_origin(origin) == canonical


def test_the_default_allows_loopback_pages_only() -> None:
    policy = OriginPolicy.from_text("")
    for page in (
        "http://localhost:5173",
        "http://127.0.0.1:8000",
        "https://[::1]",
        "http://a.localhost",
    ):
        assert policy.allows([page]), page
    for page in (EVIL, "http://localhost.evil.example", "null", "file://", "ws://localhost"):
        assert not policy.allows([page]), page
    assert policy.allows([])  # no Origin: not a browser page


def test_a_list_is_exact() -> None:
    policy = OriginPolicy.from_text(f"{APP}, http://localhost:3000")
    assert policy.allows([APP]) and policy.allows(["https://APP.example.com:443"])
    assert policy.allows(["http://localhost:3000"])
    for page in ("http://app.example.com", f"{APP}:8443", "https://x.app.example.com"):
        assert not policy.allows([page]), page
    # A list replaces the loopback default.
    assert not policy.allows(["http://localhost:5173"])
    # Browsers send one Origin; two are refused.
    assert not policy.allows([APP, APP])


def test_star_allows_any_origin() -> None:
    assert OriginPolicy.from_text("*").allows([EVIL])


def test_bad_entries_fail_at_startup() -> None:
    with pytest.raises(ValueError, match="not an origin"):
        parse_origins("https://ok.example, app.example.com")
    with pytest.raises(ValidationError):
        Settings(allowed_origins="https://app.example.com/login")
    with pytest.raises(ValidationError):
        RouterSettings(allowed_origins="ftp//x")


# -- on a worker -----------------------------------------------------------------


async def test_a_foreign_origin_is_refused_before_the_upgrade(start_server: StartServer) -> None:
    server = await start_server()
    url = url_of(server)
    refused = await refused_from(url, "127.0.0.1", origin=EVIL)
    assert refused.status == 403
    assert refused.body["error"] == "origin_not_allowed"
    assert server.stats()["connections"] == 0
    assert server.stats()["quotas"]["refused"]["origin_not_allowed"] == 1
    # The demo page on this machine and non-browser clients get through.
    for origin in ("http://localhost:5173", None):
        client = await connect_from(url, "127.0.0.1", origin=origin)
        assert (await client.start())["type"] == "session.ready"


async def test_an_allowed_origin_is_accepted(start_server: StartServer) -> None:
    server = await start_server(allowed_origins=f"{APP},https://admin.example.com")
    url = url_of(server)
    client = await connect_from(url, "127.0.0.1", origin=APP)
    await client.start()
    await client.send({"type": "input.text", "text": "hi"})
    await client.send({"type": "response.create"})
    assert (await client.until("response.done"))["status"] == "completed"
    for origin in (EVIL, "http://localhost:5173", "http://app.example.com"):
        assert (await refused_from(url, "127.0.0.1", origin=origin)).status == 403


# -- on the router -------------------------------------------------------------------


async def test_the_router_refuses_a_foreign_origin(start_router: StartRouter) -> None:
    url = router_url(await start_router(allowed_origins=APP))
    refused = await refused_from(url, "127.0.0.1", origin=EVIL)
    assert (refused.status, refused.body["error"]) == (403, "origin_not_allowed")
    # Past the front door: no worker is registered, so the router's own 503.
    refused = await refused_from(url, "127.0.0.1", origin=APP)
    assert (refused.status, refused.body["error"]) == (503, "no worker")


async def test_the_router_limits_handshakes_per_address(start_router: StartRouter) -> None:
    url = router_url(
        await start_router(
            quota_exempt="", handshake_burst_per_ip=3, handshakes_per_second_per_ip=0.001
        )
    )
    for _ in range(3):
        assert (await refused_from(url, "127.0.0.2")).status == 503
    refused = await refused_from(url, "127.0.0.2")
    assert (refused.status, refused.body["error"]) == (429, "handshake_rate_limited")
    assert int(refused.headers["retry-after"]) >= 1
    assert (await refused_from(url, "127.0.0.3")).status == 503
