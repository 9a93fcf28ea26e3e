"""Small HTTP and WebSocket helpers for the front-door tests."""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.error
import urllib.request
from typing import Any

from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from protocol.encoding import JSON_SUBPROTOCOL
from tests.wsserver.wire import RawClient


def _request(
    url: str, method: str, key: str | None, context: ssl.SSLContext | None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    request = urllib.request.Request(url, method=method)
    if key is not None:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, json.load(response), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc), dict(exc.headers)


async def http(
    base: str,
    path: str,
    *,
    method: str = "GET",
    key: str | None = None,
    context: ssl.SSLContext | None = None,
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, JSON body, headers) of one request, off the event loop."""
    return await asyncio.to_thread(_request, base + path, method, key, context)


async def mint(base: str, key: str, query: str = "ttl_s=60") -> str:
    """A client token from ``POST /v1/client_tokens``."""
    status, body, _ = await http(base, f"/v1/client_tokens?{query}", method="POST", key=key)
    assert status == 201, body
    token: str = body["token"]
    return token


async def connect_as(
    url: str, *, key: str | None = None, token: str | None = None, **kwargs: Any
) -> RawClient:
    """A raw JSON connection presenting ``key`` as a header or ``token`` as a subprotocol."""
    subprotocols = [Subprotocol(JSON_SUBPROTOCOL)]
    if token is not None:
        subprotocols.append(Subprotocol(f"wsserver.token.{token}"))
    headers = {"Authorization": f"Bearer {key}"} if key is not None else None
    kwargs.setdefault("additional_headers", headers)
    ws = await connect(url, subprotocols=subprotocols, compression=None, **kwargs)
    return RawClient(ws)
