"""Clients from chosen loopback addresses (127.0.0.2, 127.0.0.3, ...): distinct IPs for quotas."""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin, Subprotocol

from protocol.encoding import JSON_SUBPROTOCOL
from tests.wsserver.wire import RawClient


async def _socket_from(url: str, source: str) -> socket.socket:
    host, port = url.removeprefix("ws://").split("/")[0].split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    return sock


async def connect_from(
    url: str, source: str, *, origin: str | None = None, headers: dict[str, str] | None = None
) -> RawClient:
    """A JSON client whose connection comes from ``source``."""
    ws = await connect(
        url,
        sock=await _socket_from(url, source),
        subprotocols=[Subprotocol(JSON_SUBPROTOCOL)],
        compression=None,
        origin=Origin(origin) if origin is not None else None,
        additional_headers=headers,
        proxy=None,
    )
    return RawClient(ws)


@dataclass
class Refused:
    """A handshake the server answered with an HTTP error instead of the upgrade."""

    status: int
    headers: dict[str, str]
    body: dict[str, Any]


async def refused_from(
    url: str, source: str, *, origin: str | None = None, headers: dict[str, str] | None = None
) -> Refused:
    """Open a connection that must be refused before the upgrade; what the server said."""
    try:
        client = await connect_from(url, source, origin=origin, headers=headers)
    except InvalidStatus as exc:
        response = exc.response
        return Refused(
            response.status_code,
            {name.lower(): value for name, value in response.headers.raw_items()},
            json.loads(response.body or b"{}"),
        )
    await client.close()
    raise AssertionError("the handshake was accepted")
