"""HTTP/1.1 as the router speaks it: request heads parsed once, small JSON answers.

Only heads: the router never parses WebSocket frames, and the only bodies it
writes are its own small JSON responses.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry

from wsserver.frontdoor.authenticator import AuthRefusal
from wsserver.metrics import CONTENT_TYPE, render
from wsserver.router.errors import MalformedHead

SESSION_HEADER = "x-wsserver-session"
MAX_SESSION_ID_CHARS = 200
END_OF_HEAD = b"\r\n\r\n"
MAX_HEADERS = 128
"""The most header lines a head may have (the workers' parser allows as many)."""
_VERSIONS = (b"HTTP/1.1", b"HTTP/1.0")
_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
"""A header name (RFC 9110 ``token``)."""
_FIELD_VALUE = re.compile(rb"[\x09\x20-\x7e\x80-\xff]*")
"""A header value: visible bytes, spaces and tabs (RFC 9110 ``field-value``)."""
_TARGET = re.compile(rb"[\x21-\x7e]+")
"""A request target: visible ASCII."""


@dataclass(frozen=True)
class RequestHead:
    """A parsed HTTP/1.1 request head; ``raw`` is forwarded byte for byte."""

    raw: bytes
    method: str
    target: str
    headers: dict[str, str]
    """Lowercased names; repeated headers joined with ``", "``."""

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def upgrade(self) -> bool:
        """A WebSocket upgrade request."""
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        return "upgrade" in tokens and self.headers.get("upgrade", "").lower() == "websocket"

    @property
    def session_id(self) -> str | None:
        """The session to resume: ``?session_id=`` first, else ``X-Wsserver-Session``."""
        values = parse_qs(urlsplit(self.target).query).get("session_id")
        found = values[0] if values else self.headers.get(SESSION_HEADER)
        return (found.strip() or None) if found else None


def parse_request_head(raw: bytes) -> RequestHead:
    """Parse a request head ending in CRLF CRLF; :class:`MalformedHead` when it is not
    one a worker would read.

    As strict as the workers' HTTP parser (websockets'): a head it refuses would make
    the worker close without an answer, which the router would take for a worker that
    failed (and try the next one). So the router refuses it itself, with a 400.
    """
    lines = raw[: -len(END_OF_HEAD)].split(b"\r\n")
    parts = lines[0].split(b" ")
    if (
        len(parts) != 3
        or not _TOKEN.fullmatch(parts[0])
        or not _TARGET.fullmatch(parts[1])
        or parts[2] not in _VERSIONS
    ):
        raise MalformedHead("malformed request line")
    if len(lines) > MAX_HEADERS + 1:
        raise MalformedHead(f"more than {MAX_HEADERS} headers")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        raw_name, colon, raw_value = line.partition(b":")
        raw_value = raw_value.strip(b" \t")
        # A bare CR or LF, a NUL or a control byte: refused (header smuggling).
        if not colon or not _TOKEN.fullmatch(raw_name) or not _FIELD_VALUE.fullmatch(raw_value):
            raise MalformedHead("malformed header line")
        key, value = raw_name.decode("ascii").lower(), raw_value.decode("latin-1")
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if "transfer-encoding" in headers:
        raise MalformedHead("a request body is not accepted")
    if set(headers.get("content-length", "0").split(", ")) != {"0"}:
        raise MalformedHead("a request body is not accepted")
    head = RequestHead(raw, parts[0].decode("ascii"), parts[1].decode("ascii"), headers)
    try:
        urlsplit(head.target)  # every later read of path and query splits it again
    except ValueError as exc:  # "//[::1": an unclosed IPv6 host
        raise MalformedHead("malformed request target") from exc
    if len(head.session_id or "") > MAX_SESSION_ID_CHARS:
        raise MalformedHead("session id too long")
    return head


def response_status(raw: bytes) -> int:
    """The status code of a response head (``HTTP/1.1 101 Switching Protocols``);
    :class:`MalformedHead` when there is none."""
    parts = raw.split(b"\r\n", 1)[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise MalformedHead("malformed status line")
    return int(parts[1])


def with_forwarded_for(raw: bytes, client_ip: str) -> bytes:
    """``raw`` with ``X-Forwarded-For`` appended before the blank line."""
    return raw[:-2] + f"X-Forwarded-For: {client_ip}\r\n\r\n".encode("latin-1")


async def refuse(writer: asyncio.StreamWriter, refusal: AuthRefusal) -> None:
    """401/403 with ``WWW-Authenticate``, before any worker is contacted."""
    await respond(writer, refusal.status, refusal.body(), www_authenticate=refusal.www_authenticate)


async def respond(
    writer: asyncio.StreamWriter,
    status: HTTPStatus,
    body: dict[str, Any],
    *,
    retry: int = 0,
    www_authenticate: str = "",
) -> None:
    """Write a small JSON response (the connection closes after it: no keep-alive)."""
    payload = json.dumps(body).encode()
    extra = f"Retry-After: {retry}\r\n" if retry else ""
    if www_authenticate:
        extra += f"WWW-Authenticate: {www_authenticate}\r\n"
    head = (
        f"HTTP/1.1 {status.value} {status.phrase}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n{extra}Connection: close\r\n\r\n"
    )
    writer.write(head.encode() + payload)
    with contextlib.suppress(OSError):
        await writer.drain()


async def respond_metrics(writer: asyncio.StreamWriter, registry: CollectorRegistry | None) -> None:
    """``GET /metrics``: the Prometheus text format; 404 with ``--metrics off``."""
    if registry is None:
        return await respond(writer, HTTPStatus.NOT_FOUND, {"error": "metrics are off"})
    payload = render(registry)
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: {CONTENT_TYPE}\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode() + payload)
    with contextlib.suppress(OSError):
        await writer.drain()
    return None
