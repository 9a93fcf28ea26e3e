"""The SDK against a worker with authentication on: every credential kind, refusals, resume."""

from __future__ import annotations

import pytest

from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.frontdoor.credentials import Credentials
from tests.wsserver.frontdoor.http import mint
from tests.wsserver.relay import ChoppingRelay
from wsserver.client.session_client import AuthenticationError, Backoff, SessionClient


def base_of(url: str) -> str:
    return url.replace("ws://", "http://", 1)


async def test_api_key_jwt_and_client_token_each_get_an_answer(
    start_server: StartServer, creds: Credentials
) -> None:
    server = await start_server(**creds.settings(), answer_tokens=12)
    url = url_of(server)
    token = await mint(base_of(url), creds.alice_key)
    owners = []
    for kwargs in (
        {"api_key": creds.alice_key},
        {"api_key": creds.hs256("carol")},
        {"client_token": token},
    ):
        async with SessionClient(url, **kwargs) as client:  # type: ignore[arg-type]
            result = await client.ask("hello")
            assert result.status == "completed"
            assert len(result.text.split()) == 12
            assert client.session_id is not None
            owners.append(server.sessions[client.session_id].principal)
    # The token minted with alice's key makes alice's sessions.
    assert owners == ["alice", "carol", "alice"]


@pytest.mark.parametrize("kind", ["none", "wrong_key", "forged_token"])
async def test_a_refused_credential_fails_open_at_once(
    start_server: StartServer, creds: Credentials, kind: str
) -> None:
    server = await start_server(**creds.settings())
    kwargs = {
        "none": {},
        "wrong_key": {"api_key": "wsk_not_a_key"},
        "forged_token": {"client_token": "wct_forged.signature"},
    }[kind]
    client = SessionClient(url_of(server), backoff=Backoff(base=0.05, max_attempts=50), **kwargs)
    with pytest.raises(AuthenticationError):
        await client.open()
    # Never retried: one refusal, not fifty.
    assert client.reconnects == 0
    assert server.stats()["sessions"] == 0


async def test_a_client_token_session_resumes_after_a_drop(
    start_server: StartServer, creds: Credentials
) -> None:
    server = await start_server(**creds.settings(), answer_tokens=300, decode_rate=300)
    token = await mint(base_of(url_of(server)), creds.bob_key)
    relay = ChoppingRelay(server.port)
    port = await relay.start()
    try:
        async with SessionClient(
            f"ws://127.0.0.1:{port}", client_token=token, backoff=Backoff(base=0.05)
        ) as client:
            await client.create_response("long")
            words: list[str] = []
            while len(words) < 50:
                event = await client.next_event(5)
                if event.get("type") == "response.text.delta":
                    words.append(event["delta"])
            client.drop_connection()
            rest = await client.collect_response(timeout=30)
        assert rest.status == "completed"
        # Resumed in place: the words before and after the drop make the whole answer once.
        assert len(("".join(words) + rest.text).split()) == 300
        assert client.reconnects >= 1
    finally:
        await relay.stop()
