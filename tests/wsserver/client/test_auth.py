"""The SDK's credentials on the wire, against a stand-in server that records handshakes.

The stand-in is a plain websockets server speaking just enough of the protocol
(``session.ready`` for a ``session.start``), so these tests see exactly what the SDK
puts in its handshake and how it takes each HTTP refusal.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from http import HTTPStatus

import pytest
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from protocol.codes import CLOSE_CODES, CloseCodeInfo, Disposition
from tests.processes import WSSERVER, cli_env
from wsserver.client import AuthenticationError, Backoff, ClientError, SessionClient, SessionClosed

KEY = "wk_live_0123456789abcdef"
TOKEN = "ct_9876543210fedcba"
RESUME_TOKEN = "rt_resume_secret_42"


@dataclass
class StandIn:
    """Answers each handshake with the next planned HTTP status (None: accept)."""

    plan: list[tuple[int, dict[str, str]] | None] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    accepted_at: list[float] = field(default_factory=list)
    refused_at: list[float] = field(default_factory=list)
    connections: list[ServerConnection] = field(default_factory=list)
    close_after_ready: int | None = None
    """A close code to send right after ``session.ready``."""
    server: Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        port = next(iter(self.server.sockets)).getsockname()[1]
        return f"ws://127.0.0.1:{port}/"

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        self.requests.append(request)
        if request.path.startswith("/usage/"):
            body = json.dumps({"session_id": request.path.removeprefix("/usage/")}).encode()
            headers = Headers([("Content-Type", "application/json")])
            headers["Content-Length"] = str(len(body))
            return Response(200, "OK", headers, body)
        step = self.plan.pop(0) if self.plan else None
        if step is None:
            self.accepted_at.append(asyncio.get_running_loop().time())
            return None
        self.refused_at.append(asyncio.get_running_loop().time())
        status, extra = step
        body = json.dumps({"error": HTTPStatus(status).phrase.lower()}).encode()
        headers = Headers([("Content-Type", "application/json"), *extra.items()])
        headers["Content-Length"] = str(len(body))
        return Response(status, HTTPStatus(status).phrase, headers, body)

    async def handle(self, ws: ServerConnection) -> None:
        self.connections.append(ws)
        async for frame in ws:
            message = json.loads(frame)
            if message["type"] in ("session.start", "session.resume"):
                ready = {
                    "type": "session.ready",
                    "session_id": "sess_standin",
                    "resume_token": RESUME_TOKEN,
                    "resumed": message["type"] == "session.resume",
                    "last_seq": 0,
                    "heartbeat_interval_ms": 15000,
                }
                await ws.send(json.dumps(ready))
                if self.close_after_ready is not None:
                    await ws.close(self.close_after_ready, "refused")


@pytest.fixture
async def stand_in() -> AsyncIterator[StandIn]:
    standin = StandIn()
    async with serve(
        standin.handle,
        "127.0.0.1",
        0,
        subprotocols=["wsserver.v1.json"],  # type: ignore[list-item]
        process_request=standin.process_request,
    ) as server:
        standin.server = server
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


async def _run_cli(*args: str, **env: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *WSSERVER,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=cli_env(**env),
    )
    output, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, output.decode()


async def test_chat_sends_the_credentials_and_reports_a_refusal(stand_in: StandIn) -> None:
    stand_in.plan = [(401, {})]
    code, output = await _run_cli(
        "chat", "--url", stand_in.url, "--api-key", KEY, "--client-token", TOKEN, "hi"
    )
    assert code == 1
    assert "http 401" in output
    assert KEY not in output and TOKEN not in output
    (request,) = stand_in.requests
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.headers["Sec-WebSocket-Protocol"].endswith(f"wsserver.token.{TOKEN}")


async def test_chat_takes_the_credentials_from_the_environment(stand_in: StandIn) -> None:
    stand_in.plan = [(403, {})]
    code, output = await _run_cli(
        "chat", "--url", stand_in.url, "hi", WSSERVER_API_KEY=KEY, WSSERVER_CLIENT_TOKEN=TOKEN
    )
    assert (code, "http 403" in output) == (1, True)
    (request,) = stand_in.requests
    assert request.headers["Authorization"] == f"Bearer {KEY}"


async def test_usage_sends_the_api_key_to_the_worker(stand_in: StandIn) -> None:
    http_url = stand_in.url.replace("ws://", "http://")
    code, output = await _run_cli("usage", "sess_x", "--url", http_url, "--api-key", KEY, "--json")
    assert code == 0, output
    assert json.loads(output) == {"session_id": "sess_x"}
    (request,) = stand_in.requests
    assert request.headers["Authorization"] == f"Bearer {KEY}"


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)
