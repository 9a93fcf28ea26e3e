"""A session belongs to its principal: others cannot resume it, even with its resume token.

Two workers share a real Redis, so the refusal holds for the owner's local copy and
for a takeover from the store alike. Another principal's resume is answered exactly
like a resume of a session that does not exist.
"""

from __future__ import annotations

from typing import Any

from tests.redis_server import RedisServer
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.frontdoor.credentials import Credentials
from tests.wsserver.frontdoor.http import connect_as, http
from tests.wsserver.wire import RawClient


async def resume_as(url: str, ready: dict[str, Any], **credential: str) -> dict[str, Any]:
    """The first answer to a resume of ``ready``'s session: session.ready or error."""
    client = await connect_as(url, **credential)
    await client.resume(ready, last_seq=0)
    while True:
        message = await client.recv()
        if message["type"] in ("session.ready", "error"):
            await client.close()
            return message


def refusal(answer: dict[str, Any]) -> tuple[str, str]:
    return answer["type"], answer.get("code", "")


async def test_another_principal_cannot_resume_on_either_worker(
    start_server: StartServer, creds: Credentials, redis_url: str
) -> None:
    settings = creds.settings(store=redis_url, store_flush_ms=5)
    first = await start_server(**settings, worker_id="w1")
    second = await start_server(**settings, worker_id="w2")
    owner: RawClient = await connect_as(url_of(first), key=creds.alice_key)
    ready = await owner.start()
    owner.abort()
    nonexistent = {**ready, "session_id": "sess_does_not_exist"}
    for url in (url_of(first), url_of(second)):
        for intruder in (
            {"key": creds.bob_key},
            {"key": creds.hs256("bob")},
            {"key": creds.admin_key},  # admin reads usage; it does not take sessions
        ):
            answer = await resume_as(url, ready, **intruder)
            assert refusal(answer) == ("error", "unknown_session")
            # Word for word what a session that does not exist gets.
            unknown = await resume_as(url, nonexistent, **intruder)
            assert answer["message"] == unknown["message"]
    # The refusals took nothing: the session is still first's, and alice resumes it
    # on the other worker.
    assert first.sessions[ready["session_id"]].principal == "alice"
    answer = await resume_as(url_of(second), ready, key=creds.alice_key)
    assert answer["type"] == "session.ready" and answer["resumed"] is True
    # The record in Redis names the owner for whoever takes it over next.
    record = await second.store.get(ready["session_id"])
    assert record is not None and record.principal == "alice"


async def test_a_client_token_resumes_only_its_principals_sessions(
    start_server: StartServer, creds: Credentials
) -> None:
    server = await start_server(**creds.settings())
    base = f"http://127.0.0.1:{server.port}"
    alice = await connect_as(url_of(server), key=creds.alice_key)
    ready = await alice.start()
    alice.abort()
    _, minted, _ = await http(
        base, "/v1/client_tokens?principal=bob", method="POST", key=creds.admin_key
    )
    answer = await resume_as(url_of(server), ready, token=minted["token"])
    assert refusal(answer) == ("error", "unknown_session")
    _, minted, _ = await http(base, "/v1/client_tokens", method="POST", key=creds.alice_key)
    answer = await resume_as(url_of(server), ready, token=minted["token"])
    assert answer["type"] == "session.ready"


async def test_tool_results_reach_a_session_only_through_its_owners_connection(
    start_server: StartServer, creds: Credentials
) -> None:
    # tool.result has no session id: it applies to the session of the connection that
    # sends it, and only the owner's credential can bind a connection to the session.
    server = await start_server(**creds.settings())
    alice = await connect_as(url_of(server), key=creds.alice_key)
    await alice.start()
    bob = await connect_as(url_of(server), key=creds.bob_key)
    await bob.send({"type": "tool.result", "call_id": "call_1", "output": "{}"})
    answer = await bob.until("error")
    assert answer["code"] == "no_session"
    await alice.close()
    await bob.close()


async def test_ownership_holds_while_the_store_is_down(
    start_server: StartServer, creds: Credentials
) -> None:
    # Without the store, a worker checks a resume of its own live session locally:
    # the principal as well as the token.
    redis = RedisServer()
    redis.start()
    try:
        server = await start_server(**creds.settings(store=redis.url, store_timeout=0.2))
        alice = await connect_as(url_of(server), key=creds.alice_key)
        ready = await alice.start()
        alice.abort()
        redis.kill()
        answer = await resume_as(url_of(server), ready, key=creds.bob_key)
        assert refusal(answer) == ("error", "store_unavailable")
        answer = await resume_as(url_of(server), ready, key=creds.alice_key)
        assert answer["type"] == "session.ready"
    finally:
        redis.kill()
