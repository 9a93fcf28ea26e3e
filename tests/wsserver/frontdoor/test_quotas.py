"""Quotas and rates on a real worker: distinct clients are distinct loopback addresses.

``quota_exempt=""`` everywhere but in the test of the default: loopback is exempt
by default, so the demo and the benchmarks are not limited.
"""

from __future__ import annotations

import asyncio
from typing import Any

from protocol.codes import CLOSE_CODES, ERROR_CODES, CloseCode, Disposition
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.frontdoor.conftest import StartRouter, router_url
from tests.wsserver.frontdoor.sources import connect_from, refused_from
from tests.wsserver.wire import RawClient, wait_until

COUNTED = {"quota_exempt": ""}
SLOW = 0.001
"""A refill rate that adds no token during a test: counts, not timing, decide."""


async def answer(client: RawClient, message: dict[str, Any]) -> dict[str, Any]:
    """Send a message with an id; the server's unsequenced answer to it."""
    await client.send(message)
    while True:
        reply = await client.recv()
        if reply.get("request_id") == message.get("id") and "seq" not in reply:
            return reply


async def test_sessions_over_the_limit_are_refused_while_the_others_go_on(
    start_server: StartServer,
) -> None:
    server = await start_server(**COUNTED, max_sessions_per_ip=3)
    url = url_of(server)
    clients = [await connect_from(url, "127.0.0.2") for _ in range(4)]
    for client in clients[:3]:
        await client.start()
    refused = await answer(clients[3], {"type": "session.start", "id": "s4"})
    assert refused["type"] == "error" and refused["code"] == "session_limit_reached"
    assert refused["limit"] == 3
    assert ERROR_CODES["session_limit_reached"].disposition is Disposition.RESUME
    # The refused connection goes on without a session; the sessions go on too.
    assert (await answer(clients[3], {"type": "ping", "id": "p"}))["type"] == "pong"
    await clients[0].send({"type": "input.text", "text": "hi"})
    await clients[0].send({"type": "response.create"})
    assert (await clients[0].until("response.done"))["status"] == "completed"
    # Another address has its own quota.
    other = await connect_from(url, "127.0.0.3")
    await other.start()
    # Ending a session frees its place.
    await clients[1].close()
    await wait_until(lambda: len(server.sessions) == 3)
    assert (await clients[3].start())["type"] == "session.ready"
    assert server.stats()["quotas"]["refused"]["session_limit_reached"] == 1


async def test_a_detached_session_still_counts(start_server: StartServer) -> None:
    server = await start_server(**COUNTED, max_sessions_per_ip=1)
    url = url_of(server)
    first = await connect_from(url, "127.0.0.2")
    ready = await first.start()
    first.abort()  # dropped: the session waits for its client
    await wait_until(lambda: server.stats()["attached"] == 0)
    second = await connect_from(url, "127.0.0.2")
    assert (await answer(second, {"type": "session.start", "id": "s"}))["code"] == (
        "session_limit_reached"
    )
    # Resuming it is not a new session: never refused by the session quota.
    await second.resume(ready, ready["last_seq"])
    assert (await second.until("session.ready"))["resumed"] is True


async def test_failed_resumes_are_locked_out(start_server: StartServer) -> None:
    server = await start_server(**COUNTED, failed_resume_burst=5, failed_resumes_per_minute=SLOW)
    url = url_of(server)
    victim = await connect_from(url, "127.0.0.3")
    ready = await victim.start()
    attacker = await connect_from(url, "127.0.0.2")
    verdicts: list[str] = []
    for attempt in range(60):
        guess = {
            "type": "session.resume",
            "id": f"r{attempt}",
            # Half guess tokens of a real session, half guess session ids.
            "session_id": ready["session_id"] if attempt % 2 else f"sess_guess{attempt}",
            "resume_token": f"guess-{attempt}",
            "last_seq": 0,
        }
        reply = await answer(attacker, guess)
        verdicts.append(reply["code"])
        if reply["code"] == "too_many_failed_resumes":
            assert reply["retry_after_ms"] > 0
    checked = [v for v in verdicts if v in ("invalid_resume_token", "unknown_session")]
    assert len(checked) == 5, verdicts
    assert verdicts[5:] == ["too_many_failed_resumes"] * 55
    # Locked out means unchecked: from this address even the right token is refused now,
    right = {
        "type": "session.resume",
        "id": "right",
        "session_id": ready["session_id"],
        "resume_token": ready["resume_token"],
        "last_seq": 0,
    }
    assert (await answer(attacker, right))["code"] == "too_many_failed_resumes"
    # on every connection from it,
    second = await connect_from(url, "127.0.0.2")
    assert (await answer(second, right))["code"] == "too_many_failed_resumes"
    # while the session's own client, elsewhere, goes on and resumes.
    victim.abort()
    again = await connect_from(url, "127.0.0.3")
    await again.resume(ready, ready["last_seq"])
    assert (await again.until("session.ready"))["resumed"] is True
    assert server.stats()["quotas"]["refused"]["too_many_failed_resumes"] == 57


async def test_guesses_in_flight_on_many_connections_are_bounded(
    start_server: StartServer,
) -> None:
    server = await start_server(**COUNTED, failed_resume_burst=3, failed_resumes_per_minute=SLOW)
    url = url_of(server)
    attackers = [await connect_from(url, "127.0.0.2") for _ in range(12)]

    async def guess(client: RawClient, n: int) -> str:
        message = {
            "type": "session.resume",
            "id": f"g{n}",
            "session_id": f"sess_{n}",
            "resume_token": "x",
            "last_seq": 0,
        }
        return str((await answer(client, message))["code"])

    verdicts = await asyncio.gather(*(guess(c, n) for n, c in enumerate(attackers)))
    assert sorted(verdicts) == ["too_many_failed_resumes"] * 9 + ["unknown_session"] * 3


async def test_successful_resumes_do_not_count(start_server: StartServer) -> None:
    server = await start_server(**COUNTED, failed_resume_burst=2, failed_resumes_per_minute=SLOW)
    url = url_of(server)
    client = await connect_from(url, "127.0.0.2")
    ready = await client.start()
    for _ in range(6):
        client.abort()
        client = await connect_from(url, "127.0.0.2")
        await client.resume(ready, ready["last_seq"])
        assert (await client.until("session.ready"))["resumed"] is True
    # A resume refused for another reason than a guess does not count either.
    late = await connect_from(url, "127.0.0.2")
    ahead = {
        "type": "session.resume",
        "id": "ahead",
        "session_id": ready["session_id"],
        "resume_token": ready["resume_token"],
        "last_seq": 10_000,
    }
    for _ in range(4):
        assert (await answer(late, ahead))["code"] == "invalid_seq"
    assert "too_many_failed_resumes" not in server.stats()["quotas"]["refused"]


async def test_message_rate_counts_all_connections_of_a_principal(
    start_server: StartServer,
) -> None:
    # Without authentication, a client's principal is its address.
    server = await start_server(
        **COUNTED, message_burst_per_principal=20, messages_per_second_per_principal=SLOW
    )
    url = url_of(server)
    first = await connect_from(url, "127.0.0.2")
    second = await connect_from(url, "127.0.0.2")
    for n in range(12):
        assert (await answer(first, {"type": "ping", "id": f"a{n}"}))["type"] == "pong"
    for n in range(8):
        assert (await answer(second, {"type": "ping", "id": f"b{n}"}))["type"] == "pong"
    # Each connection is far below its own flood limit (400); together they are at 20.
    await second.send({"type": "ping", "id": "over"})
    assert await second.closed_code() == CloseCode.RATE_LIMITED
    assert second.ws.close_reason is not None and "retry_after_ms=" in second.ws.close_reason
    assert CLOSE_CODES[CloseCode.RATE_LIMITED].disposition is Disposition.RESUME
    await first.send({"type": "ping", "id": "over"})
    assert await first.closed_code() == CloseCode.RATE_LIMITED
    other = await connect_from(url, "127.0.0.3")
    assert (await answer(other, {"type": "ping", "id": "x"}))["type"] == "pong"
    assert server.stats()["quotas"]["refused"]["rate_limited"] == 2


async def test_handshake_rate_per_address(start_server: StartServer) -> None:
    server = await start_server(
        **COUNTED, handshake_burst_per_ip=5, handshakes_per_second_per_ip=SLOW
    )
    url = url_of(server)
    for _ in range(5):
        await (await connect_from(url, "127.0.0.2")).close()
    refused = await refused_from(url, "127.0.0.2")
    assert refused.status == 429
    assert refused.body["error"] == "handshake_rate_limited"
    assert refused.body["retry_after_ms"] > 0
    assert int(refused.headers["retry-after"]) >= 1
    # Before the upgrade: nothing of it reached the worker's connections.
    assert server.stats()["connections"] == 0
    await (await connect_from(url, "127.0.0.3")).close()


async def test_concurrent_connections_per_address(start_server: StartServer) -> None:
    server = await start_server(**COUNTED, max_connections_per_ip=3)
    url = url_of(server)
    clients = [await connect_from(url, "127.0.0.2") for _ in range(3)]
    refused = await refused_from(url, "127.0.0.2")
    assert (refused.status, refused.body["error"]) == (429, "connection_limit_reached")
    assert "retry-after" in refused.headers
    await connect_from(url, "127.0.0.3")
    await clients[0].close()
    await wait_until(lambda: server.stats()["connections"] == 3)
    await connect_from(url, "127.0.0.2")


async def test_loopback_is_exempt_by_default(start_server: StartServer) -> None:
    server = await start_server(max_sessions_per_ip=2, max_sessions_per_principal=2)
    url = url_of(server)
    for _ in range(3):
        await (await connect_from(url, "127.0.0.1")).start()
    assert len(server.sessions) == 3
    # Only the listed networks are exempt.
    server = await start_server(max_sessions_per_ip=2, quota_exempt="127.0.0.1/32")
    url = url_of(server)
    for _ in range(2):
        await (await connect_from(url, "127.0.0.2")).start()
    third = await connect_from(url, "127.0.0.2")
    assert (await answer(third, {"type": "session.start", "id": "s"}))["code"] == (
        "session_limit_reached"
    )


async def test_forwarded_for_is_believed_from_trusted_proxies_only(
    start_server: StartServer,
) -> None:
    server = await start_server(
        **COUNTED,
        trusted_proxies="127.0.0.1",
        handshake_burst_per_ip=2,
        handshakes_per_second_per_ip=SLOW,
    )
    url = url_of(server)

    def via(client_ip: str) -> dict[str, str]:
        return {"X-Forwarded-For": client_ip}

    # Through a trusted proxy (127.0.0.1): each forwarded client has its own rate.
    for _ in range(2):
        await (await connect_from(url, "127.0.0.1", headers=via("203.0.113.7"))).close()
    refused = await refused_from(url, "127.0.0.1", headers=via("203.0.113.7"))
    assert refused.status == 429
    await (await connect_from(url, "127.0.0.1", headers=via("203.0.113.8"))).close()
    # From anywhere else the header is the client's own claim: ignored.
    for n in range(2):
        await (await connect_from(url, "127.0.0.2", headers=via(f"198.51.100.{n}"))).close()
    refused = await refused_from(url, "127.0.0.2", headers=via("198.51.100.99"))
    assert refused.status == 429
    assert server.stats()["quotas"]["addresses"] >= 3


async def test_behind_the_router_the_worker_counts_the_clients_address(
    start_server: StartServer, start_router: StartRouter, redis_url: str
) -> None:
    # The router (127.0.0.1, a trusted proxy by default) names each client in
    # X-Forwarded-For; without it every client would count as the router.
    await start_server(**COUNTED, store=redis_url, registry_interval=0.05, max_sessions_per_ip=1)
    router = await start_router()
    await wait_until(lambda: len(router.workers) == 1)
    url = router_url(router)
    first = await connect_from(url, "127.0.0.2")
    await first.start()
    second = await connect_from(url, "127.0.0.2")
    reply = await answer(second, {"type": "session.start", "id": "s"})
    assert reply["code"] == "session_limit_reached"
    other = await connect_from(url, "127.0.0.3")
    assert (await other.start())["type"] == "session.ready"
