"""POST /demo/token attacked as a hostile page or client would: forged and odd Origins,
other methods, a preflight, and what a minted token may do (one session, 60 s, never
an admin's rights, never another visitor's session)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus

from tests.processes import WorkerProcess
from tests.wsserver.demo_page.test_endpoint import demo_worker_for_alice, raw_request
from tests.wsserver.frontdoor.credentials import Credentials, make_credentials
from tests.wsserver.frontdoor.http import connect_as, http
from wsserver.frontdoor.client_tokens import ClientTokenSigner


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> Credentials:
    return make_credentials(tmp_path_factory.mktemp("demo-attack-credentials"))


@pytest.fixture(scope="module")
def worker(creds: Credentials) -> Iterator[WorkerProcess]:
    worker = demo_worker_for_alice(creds, "demo-attack-token")
    yield worker
    worker.stop()


def demo_token(worker: WorkerProcess) -> str:
    status, _, body = raw_request(
        worker.http, "POST /demo/token HTTP/1.1", f"Origin: {worker.http}"
    )
    assert status == 201, body
    token: str = json.loads(body)["token"]
    return token


@pytest.mark.parametrize(
    "origins",
    [
        [],
        ["Origin: null"],
        ["Origin: NULL"],
        ["Origin: https://evil.example"],
        ["Origin: http://localhost.evil.example"],
        ["Origin: http://127.0.0.1.evil.example"],
        ["Origin: http://localhost.:80"],
        ["Origin: file://"],
        ["Origin: chrome-extension://abcdef"],
        ["Origin: http://user@localhost"],
        ["Origin: not an origin"],
        ["Origin: http://127.0.0.1", "Origin: http://localhost"],
    ],
)
def test_no_token_for_another_site_or_an_odd_origin(
    worker: WorkerProcess, origins: list[str]
) -> None:
    status, headers, body = raw_request(worker.http, "POST /demo/token HTTP/1.1", *origins)
    assert status == 403, (status, body)
    assert b"wct_" not in body
    assert "access-control-allow-origin" not in headers


@pytest.mark.parametrize("method", ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"])
def test_only_post_mints_and_a_preflight_gets_no_cors_grant(
    worker: WorkerProcess, method: str
) -> None:
    status, headers, body = raw_request(
        worker.http,
        f"{method} /demo/token HTTP/1.1",
        f"Origin: {worker.http}",
        "Access-Control-Request-Method: POST",
    )
    assert status == 405, (status, body)
    assert b"wct_" not in body
    assert not any(name.startswith("access-control-") for name in headers)


def test_the_token_is_for_one_session_of_the_demo_principal_for_60_s(
    worker: WorkerProcess, creds: Credentials
) -> None:
    claims = ClientTokenSigner(Path(creds.token_secret_file).read_bytes().strip()).verify(
        demo_token(worker)
    )
    assert claims.principal == "alice"
    assert (claims.max_sessions, claims.can_start) == (1, True)
    assert claims.expires_at - claims.issued_at == pytest.approx(60, abs=0.01)


async def test_a_token_opens_one_session_and_not_a_second(worker: WorkerProcess) -> None:
    token = demo_token(worker)
    first = await connect_as(worker.url, token=token)
    await first.start()
    second = await connect_as(worker.url, token=token)
    await second.send({"type": "session.start"})
    assert await second.closed_code() == 4403
    await first.close()


async def test_a_token_has_no_admin_rights_and_mints_nothing(worker: WorkerProcess) -> None:
    token = demo_token(worker)
    for path, method in (
        ("/stats", "GET"),
        ("/usage/sess_x", "GET"),
        ("/v1/client_tokens?max_sessions=1000&ttl_s=3600", "POST"),
    ):
        status, body, _ = await http(worker.http, path, method=method, key=token)
        assert status in (401, 403), (path, status, body)
        assert "token" not in body or body.get("token") is None


async def test_a_visitor_cannot_resume_another_visitors_session(worker: WorkerProcess) -> None:
    victim = await connect_as(worker.url, token=demo_token(worker))
    ready = await victim.start()
    attacker = await connect_as(worker.url, token=demo_token(worker))
    await attacker.send(
        {
            "type": "session.resume",
            "session_id": ready["session_id"],
            "resume_token": "wrt_guessed",
            "last_seq": 0,
        }
    )
    answer = await attacker.recv()
    assert answer["type"] == "error", answer
    await victim.close()


async def test_a_demo_token_in_the_query_of_another_origin_page_is_refused(
    worker: WorkerProcess,
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        await connect_as(
            worker.url,
            token=demo_token(worker),
            additional_headers={"Origin": "https://evil.example"},
        )
    assert refused.value.response.status_code == 403
