"""An upstream's non-200 answer, or a transport failure, as an :class:`UpstreamFailure`."""

from __future__ import annotations

import json
import math
import re

import httpx

from wsserver.engine.openai.errors import UpstreamFailure, UpstreamProtocolError, sanitize

ERROR_BODY_BYTES = 4096
"""Bytes of an error answer read for its message; the rest is not read."""

_MESSAGE_FIELD = re.compile(r'"message"\s*:\s*"((?:[^"\\]|\\.)*)')
"""A JSON error's message, also in a body cut short (where the JSON no longer parses)."""

_RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


async def status_failure(response: httpx.Response, secret: str | None) -> UpstreamFailure:
    """The failure a non-200 answer means, with the upstream's message (short, clean)."""
    body = bytearray()
    try:
        async for piece in response.aiter_raw():
            body += piece
            if len(body) >= ERROR_BODY_BYTES:
                break
    except httpx.HTTPError:
        pass  # the status says enough
    message = _message(bytes(body[:ERROR_BODY_BYTES]))
    status = response.status_code
    text = f"upstream answered {status}"
    if message:
        text += f": {sanitize(message, secret)}"
    return UpstreamFailure(
        text,
        retryable=status in _RETRYABLE_STATUS,
        retry_after=_retry_after(response.headers.get("retry-after")),
    )


def not_a_stream(response: httpx.Response) -> UpstreamProtocolError:
    """A 200 that is not an event stream (an HTML page from a proxy, a JSON answer)."""
    kind = sanitize(response.headers.get("content-type", "none"))
    return UpstreamProtocolError(f"upstream answered {kind}, not an event stream")


def transport_failure(exc: httpx.HTTPError, secret: str | None) -> UpstreamFailure:
    """A connection that could not open, or broke: worth another try before the first token."""
    kind = type(exc).__name__
    detail = sanitize(str(exc), secret)
    return UpstreamFailure(
        f"upstream connection failed ({kind}{': ' + detail if detail else ''})", retryable=True
    )


def _message(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except ValueError:
        found = _MESSAGE_FIELD.search(text)
        if found is None:
            return text
        try:
            return str(json.loads(f'"{found.group(1)}"'))
        except ValueError:
            return found.group(1)
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return text


def _retry_after(value: str | None) -> float | None:
    """Seconds of a ``Retry-After`` header (the delay form; a date is not honored)."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
