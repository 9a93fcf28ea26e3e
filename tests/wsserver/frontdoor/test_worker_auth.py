"""A worker with authentication on: every handshake and HTTP endpoint, over real sockets."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from websockets.exceptions import InvalidStatus

from tests.redis_server import free_port
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.frontdoor.credentials import Credentials
from tests.wsserver.frontdoor.http import connect_as, http, mint
from wsserver.worker.server import WorkerServer


def base_of(server: WorkerServer) -> str:
    return f"http://127.0.0.1:{server.port}"


async def refused(url: str, **kwargs: object) -> InvalidStatus:
    with pytest.raises(InvalidStatus) as caught:
        await connect_as(url, **kwargs)  # type: ignore[arg-type]
    return caught.value


async def test_handshakes_without_valid_credentials_get_401(
    start_server: StartServer, creds: Credentials
) -> None:
    server = await start_server(**creds.settings())
    url = url_of(server)
    for kwargs in ({}, {"key": "wsk_wrong"}, {"token": "wct_forged.sig"}):
        refusal = await refused(url, **kwargs)
        assert refusal.response.status_code == 401
        assert refusal.response.headers["WWW-Authenticate"].startswith('Bearer realm="wsserver"')
        assert refusal.response.headers["Content-Type"] == "application/json"
        assert b'"error": "unauthorized"' in refusal.response.body
    # A credential in the query is refused even when a good one is in the header.
    refusal = await refused(f"{url}/?token={creds.alice_key}", key=creds.alice_key)
    assert refusal.response.status_code == 401
    assert b"URL query" in refusal.response.body
    assert server.stats()["connections"] == 0


async def test_every_credential_kind_opens_a_session(
    start_server: StartServer, creds: Credentials
) -> None:
    server = await start_server(**creds.settings())
    url = url_of(server)
    token = await mint(base_of(server), creds.alice_key)
    clients = [
        await connect_as(url, key=creds.alice_key),
        await connect_as(url, key=creds.hs256("carol")),
        await connect_as(url, token=token),
        await connect_as(url, key=await mint(base_of(server), creds.alice_key)),
    ]
    for client in clients:
        # The token entry is never chosen: the encoding subprotocol is.
        assert client.ws.subprotocol == "wsserver.v1.json"
        ready = await client.start()
        assert ready["session_id"].startswith("sess_")
        await client.close()
    owners = {runtime.principal for runtime in server.sessions.values()}
    assert owners <= {"alice", "carol"}


async def test_probes_stay_open_and_admin_endpoints_need_an_admin_key(
    start_server: StartServer, creds: Credentials
) -> None:
    server = await start_server(**creds.settings())
    base = base_of(server)
    assert (await http(base, "/healthz"))[0] == 200
    assert (await http(base, "/readyz"))[0] == 200
    for path in ("/stats", "/usage/sess_x"):
        status, body, headers = await http(base, path)
        assert status == 401 and "WWW-Authenticate" in headers
        status, body, headers = await http(base, path, key=creds.alice_key)
        assert status == 403 and body["error"] == "forbidden"
        assert 'error="insufficient_scope"' in headers["WWW-Authenticate"]
    assert (await http(base, "/stats", key=creds.admin_key))[0] == 200
    assert (await http(base, "/usage/sess_x", key=creds.admin_key))[0] == 404


async def test_admin_listener_serves_admin_endpoints_without_credentials(
    start_server: StartServer, creds: Credentials
) -> None:
    admin_port = free_port()
    server = await start_server(**creds.settings(admin_port=admin_port))
    admin = f"http://127.0.0.1:{admin_port}"
    assert (await http(admin, "/stats"))[0] == 200
    assert (await http(admin, "/healthz"))[0] == 200
    assert (await http(admin, "/v1/client_tokens", method="POST"))[0] == 404
    # The main port still wants an admin key.
    assert (await http(base_of(server), "/stats"))[0] == 401
    with pytest.raises(InvalidStatus) as caught:
        await connect_as(f"ws://127.0.0.1:{admin_port}", key=creds.admin_key)
    assert caught.value.response.status_code == 404


async def test_client_token_minting_rules(start_server: StartServer, creds: Credentials) -> None:
    server = await start_server(**creds.settings(client_token_max_ttl=600))
    base = base_of(server)
    path = "/v1/client_tokens"
    status, body, _ = await http(base, f"{path}?ttl_s=60", method="POST", key=creds.alice_key)
    assert status == 201 and body["principal"] == "alice" and body["token"].startswith("wct_")
    # Only an admin names another principal.
    status, _, _ = await http(base, f"{path}?principal=bob", method="POST", key=creds.alice_key)
    assert status == 403
    status, body, _ = await http(base, f"{path}?principal=bob", method="POST", key=creds.admin_key)
    assert status == 201 and body["principal"] == "bob"
    # A client token mints nothing; lifetimes are capped; GET is not minting.
    token = body["token"]
    assert (await http(base, path, method="POST", key=token))[0] == 403
    assert (await http(base, f"{path}?ttl_s=601", method="POST", key=creds.alice_key))[0] == 400
    assert (await http(base, f"{path}?color=red", method="POST", key=creds.alice_key))[0] == 400
    assert (await http(base, path, key=creds.alice_key))[0] == 405
    assert (await http(base, path, method="POST"))[0] == 401


async def test_client_token_limits_are_enforced(
    start_server: StartServer, creds: Credentials
) -> None:
    server = await start_server(**creds.settings())
    url, base = url_of(server), base_of(server)
    one = await mint(base, creds.alice_key, "ttl_s=60&max_sessions=1")
    first = await connect_as(url, token=one)
    ready = await first.start()
    first.abort()  # a dropped connection: the session waits to be resumed
    # The second session.start with the same token: terminal 4403.
    second = await connect_as(url, token=one)
    await second.send({"type": "session.start"})
    assert await second.closed_code() == 4403
    # Resuming its own session is still allowed.
    again = await connect_as(url, token=one)
    await again.resume(ready, last_seq=0)
    assert (await again.until("session.ready"))["resumed"] is True
    await again.close()
    resume_only = await mint(base, creds.alice_key, "ttl_s=60&can_start=false")
    client = await connect_as(url, token=resume_only)
    await client.send({"type": "session.start"})
    assert await client.closed_code() == 4403


async def test_a_credential_that_expires_before_session_start_is_closed_4401(
    start_server: StartServer, creds: Credentials
) -> None:
    server = await start_server(**creds.settings())
    status, body, _ = await http(
        base_of(server), "/v1/client_tokens?ttl_s=2", method="POST", key=creds.alice_key
    )
    assert status == 201
    # Valid at the handshake, expired when session.start arrives.
    client = await connect_as(url_of(server), token=body["token"])
    await asyncio.sleep(max(0.0, body["expires_at"] - time.time()) + 0.05)
    await client.send({"type": "session.start"})
    assert await client.closed_code() == 4401


async def test_unknown_paths_are_not_answered_without_credentials(
    start_server: StartServer, creds: Credentials
) -> None:
    server = await start_server(**creds.settings())
    assert (await http(base_of(server), "/anything"))[0] == 401


@pytest.mark.parametrize(
    ("allow", "expected"), [("127.0.0.1,::1", "203.0.113.7"), ("10.0.0.0/8", "127.0.0.1")]
)
async def test_client_ip_comes_from_a_trusted_proxy_only(
    start_server: StartServer, creds: Credentials, allow: str, expected: str
) -> None:
    server = await start_server(**creds.settings(trusted_proxies=allow))
    client = await connect_as(
        url_of(server),
        key=creds.alice_key,
        additional_headers={
            "Authorization": f"Bearer {creds.alice_key}",
            # What the client wrote first, then what the nearest proxy appended.
            "X-Forwarded-For": "198.51.100.1, 203.0.113.7",
        },
    )
    await client.start()
    (connection,) = server.connections
    admission = server.admission(connection)
    assert admission is not None
    assert (admission.principal.id, admission.client_ip) == ("alice", expected)
    await client.close()


@pytest.mark.parametrize("auth", ["keys", "none"])
async def test_repeated_upgrade_headers_get_an_http_error_not_a_traceback(
    start_server: StartServer,
    creds: Credentials,
    caplog: pytest.LogCaptureFixture,
    auth: str,
) -> None:
    server = await start_server(**(creds.settings() if auth == "keys" else {}))
    for _ in range(3):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            b"Sec-WebSocket-Version: 13\r\n\r\n"
        )
        status = await asyncio.wait_for(reader.readline(), 5)
        writer.close()
        assert status.split()[1] in (b"400", b"401", b"426"), status
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
