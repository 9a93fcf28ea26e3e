"""No secret reaches a log: a worker and a router at debug level, through good and bad
credentials and resumes, then every line they printed is searched for every secret."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from tests.processes import WorkerProcess, eventually
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.frontdoor.credentials import Credentials
from tests.wsserver.frontdoor.http import connect_as, http, mint
from tests.wsserver.router.test_router import RouterProcess
from wsserver.frontdoor.redaction import RedactingFilter


def flags(creds: Credentials) -> list[str]:
    return [
        "--api-keys-file",
        creds.keys_file,
        "--jwt-secret-file",
        creds.jwt_secret_file,
        "--client-token-secret-file",
        creds.token_secret_file,
        "--log-level",
        "DEBUG",
    ]


@pytest.fixture
def processes(creds: Credentials, redis_url: str) -> Iterator[tuple[WorkerProcess, Any]]:
    worker = WorkerProcess(
        "--store", redis_url, "--registry-interval", "0.1", *flags(creds), name="logs-worker"
    ).start()
    router = RouterProcess(redis_url, *flags(creds))
    yield worker, router
    router.stop()
    worker.stop()


async def refused(url: str, **credential: str) -> int:
    with pytest.raises(InvalidStatus) as caught:
        await connect_as(url, **credential)
    return caught.value.response.status_code


async def test_worker_and_router_logs_hold_no_secret(
    processes: tuple[WorkerProcess, Any], creds: Credentials
) -> None:
    worker, router = processes
    await eventually(lambda: router.stats_as(creds.admin_key)["live_workers"] == 1)
    secrets_used: list[str] = [creds.alice_key, creds.bob_key, creds.admin_key]
    secrets_used += [creds.jwt_secret.decode(), creds.token_secret.decode()]
    for url in (worker.url, router.url):
        base = url.replace("ws://", "http://")
        token = await mint(base, creds.alice_key)
        good_jwt, expired_jwt = creds.hs256("carol"), creds.hs256("carol", ttl=-3600)
        wrong_key = "wsk_" + "q" * 43
        forged = token[:-4] + "AAAA"
        secrets_used += [token, good_jwt, expired_jwt, wrong_key, forged]
        # Failed authentication, every way.
        assert await refused(url, key=wrong_key) == 401
        assert await refused(url, token=forged) == 401
        assert await refused(url, key=expired_jwt) == 401
        assert await refused(f"{url}/?token={wrong_key}") == 401
        assert (await http(base, "/stats", key=wrong_key))[0] == 401
        # Successful ones, a session each, then resumes with the right and a wrong token.
        for credential in ({"key": creds.alice_key}, {"token": token}, {"key": good_jwt}):
            client = await connect_as(url, **credential)
            ready = await client.start()
            secrets_used.append(ready["resume_token"])
            client.abort()
            again = await connect_as(url, **credential)
            await again.resume(ready, last_seq=0)
            assert (await again.until("session.ready"))["resumed"]
            again.abort()
            wrong = {**ready, "resume_token": "wrt_" + "z" * 43}
            secrets_used.append(wrong["resume_token"])
            third = await connect_as(url, **credential)
            await third.resume(wrong, last_seq=0)
            assert (await third.until("error"))["code"] == "invalid_resume_token"
            await third.close()
    worker.stop()
    router.stop()
    output = "".join(worker.lines) + "".join(router.lines)
    assert "DEBUG" in output or "INFO" in output, output
    for secret in secrets_used:
        assert secret not in output


async def test_library_debug_output_is_redacted(
    start_server: StartServer, creds: Credentials
) -> None:
    # websockets logs every handshake header at debug level (the CLI keeps it at
    # WARNING); if someone turns it on, the filter still keeps the secrets out.
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    root, library = logging.getLogger(), logging.getLogger("websockets")
    root.addHandler(handler)
    previous = library.level
    library.setLevel(logging.DEBUG)
    try:
        server = await start_server(**creds.settings())
        client = await connect_as(url_of(server), key=creds.alice_key)
        ready = await client.start()
        await client.close()
        token = await mint(f"http://127.0.0.1:{server.port}", creds.alice_key)
        second = await connect_as(url_of(server), token=token)
        await second.close()
    finally:
        library.setLevel(previous)
        root.removeHandler(handler)
    output = stream.getvalue()
    assert "Authorization: Bearer [redacted]" in output
    assert "wsserver.token.[redacted]" in output
    for secret in (creds.alice_key, token, ready["resume_token"]):
        assert secret not in output
