"""The SDK's credentials on the wire, against a stand-in server that records handshakes.

The stand-in (``stand_in.py``) speaks just enough of the protocol for these tests to see
exactly what the SDK puts in its handshake and how it takes each HTTP refusal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import pytest

from protocol.codes import CLOSE_CODES, CloseCodeInfo, Disposition
from tests.wsserver.client.stand_in import KEY, RESUME_TOKEN, TOKEN, StandIn, running_stand_in
from wsserver.client import AuthenticationError, Backoff, ClientError, SessionClient, SessionClosed


@pytest.fixture
async def stand_in() -> AsyncIterator[StandIn]:
    async with running_stand_in() as standin:
        yield standin


def _client(url: str, **options: object) -> SessionClient:
    return SessionClient(url, backoff=Backoff(base=0.001, cap=0.002), open_timeout=5, **options)  # type: ignore[arg-type]


async def test_api_key_is_a_bearer_header_and_client_token_a_subprotocol(
    stand_in: StandIn,
) -> None:
    async with _client(stand_in.url, api_key=KEY, client_token=TOKEN) as client:
        assert client.session_id == "sess_standin"
    (request,) = stand_in.requests
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    offered = request.headers["Sec-WebSocket-Protocol"]
    assert offered == f"wsserver.v1.json, wsserver.token.{TOKEN}"
    # Never in the URL: proxies log query strings.
    assert TOKEN not in request.path and KEY not in request.path
    assert stand_in.connections[0].subprotocol == "wsserver.v1.json"


async def test_credentials_come_from_the_environment(
    stand_in: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WSSERVER_API_KEY", KEY)
    monkeypatch.setenv("WSSERVER_CLIENT_TOKEN", TOKEN)
    async with _client(stand_in.url):
        pass
    monkeypatch.delenv("WSSERVER_API_KEY")
    monkeypatch.delenv("WSSERVER_CLIENT_TOKEN")
    async with _client(stand_in.url):
        pass
    with_env, without = stand_in.requests
    assert with_env.headers["Authorization"] == f"Bearer {KEY}"
    assert TOKEN in with_env.headers["Sec-WebSocket-Protocol"]
    assert "Authorization" not in without.headers
    assert without.headers["Sec-WebSocket-Protocol"] == "wsserver.v1.json"


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_credentials_fail_at_once_and_are_never_retried(
    stand_in: StandIn, status: int
) -> None:
    stand_in.plan = [(status, {})] * 5
    client = _client(stand_in.url, api_key=KEY)
    with pytest.raises(AuthenticationError) as refused:
        await client.open()
    assert isinstance(refused.value, ClientError)
    assert f"http {status}" in str(refused.value)
    assert KEY not in str(refused.value)
    assert len(stand_in.requests) == 1
    assert client.reconnects == 0


@pytest.mark.parametrize("status", [429, 503])
async def test_busy_answers_are_retried_after_retry_after(stand_in: StandIn, status: int) -> None:
    stand_in.plan = [(status, {"Retry-After": "1"}), (status, {"Retry-After": "1"})]
    async with _client(stand_in.url, api_key=KEY) as client:
        assert client.session_id == "sess_standin"
    assert len(stand_in.requests) == 3
    # The backoff alone would retry within milliseconds; the server asked for a second.
    first, second = stand_in.refused_at
    assert second - first >= 1.0
    assert stand_in.accepted_at[0] - second >= 1.0


async def test_credentials_refused_on_a_reconnect_end_the_session(stand_in: StandIn) -> None:
    client = _client(stand_in.url, client_token=TOKEN)
    await client.open()
    stand_in.plan = [(401, {})] * 5
    # The server drops the connection; the token has expired meanwhile.
    stand_in.connections[0].transport.abort()
    assert (await client.next_event(5))["type"] == "session.ready"
    with pytest.raises(AuthenticationError):
        await client.next_event(5)
    with pytest.raises(AuthenticationError):
        await client.send_text("still there?")
    assert len(stand_in.requests) == 2
    await client.close()


@pytest.mark.parametrize(
    ("code", "error"), [(4005, "SessionClosed"), (4403, "AuthenticationError")]
)
async def test_terminal_close_codes_are_read_from_the_registry(
    stand_in: StandIn, monkeypatch: pytest.MonkeyPatch, code: int, error: str
) -> None:
    # A code the server adds later (here 4403) needs no SDK change: the registry decides.
    info = CloseCodeInfo(4403, "forbidden", Disposition.TERMINAL, "not allowed")
    monkeypatch.setitem(CLOSE_CODES, 4403, info)
    client = _client(stand_in.url, api_key=KEY)
    await client.open()
    stand_in.close_after_ready = code
    client.drop_connection()
    events = []
    with pytest.raises(SessionClosed) as ended:
        while True:
            events.append(await client.next_event(5))
    assert type(ended.value).__name__ == error
    assert client.close_codes == [1006, code]
    assert len(stand_in.requests) == 2, "not retried"
    await client.close()


async def test_no_secret_in_repr_or_debug_logs(
    stand_in: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = _client(stand_in.url, api_key=KEY, client_token=TOKEN)
    async with client:
        # A resume on a new connection sends the resume token.
        stand_in.connections[0].transport.abort()
        await _until(lambda: len(stand_in.connections) == 2 and client._connection.connected)
        assert client.state.resume_token == RESUME_TOKEN
        text = repr(client) + repr(client._handshake.credentials)
    # The stand-in's own (server) log is not the SDK's: leave it out.
    logged = "\n".join(
        r.getMessage() for r in caplog.records if not r.name.startswith("websockets.server")
    )
    assert "Authorization: Bearer [redacted]" in logged, "the header was logged, blanked"
    assert f"wsserver.token.{TOKEN}" not in logged
    for secret in (KEY, TOKEN, RESUME_TOKEN):
        assert secret not in logged
        assert secret not in text


def test_a_token_that_cannot_travel_is_refused_without_showing_it() -> None:
    with pytest.raises(ValueError) as bad:
        SessionClient("ws://127.0.0.1:9", client_token="has space,comma")
    assert "has space" not in str(bad.value)
    with pytest.raises(ValueError):
        SessionClient("ws://127.0.0.1:9", api_key="line\r\nX-Evil: 1")


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)
