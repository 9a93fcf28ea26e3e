"""A stand-in server that records handshakes, for the SDK's and the CLI's credential tests.

It is a plain websockets server speaking just enough of the protocol (``session.ready``
for a ``session.start``, a JSON body for ``/usage/ID``), so a test sees exactly what a
client puts in its handshake and how it takes each planned HTTP refusal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from http import HTTPStatus

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from tests.processes import WSSERVER, cli_env

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


@contextlib.asynccontextmanager
async def running_stand_in() -> AsyncIterator[StandIn]:
    """A stand-in listening on a free loopback port."""
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


async def run_cli(*args: str, **env: str) -> tuple[int, str]:
    """Run the ``wsserver`` command; its exit status and output (stdout and stderr)."""
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
